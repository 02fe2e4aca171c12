# What the bench scripts that run compiled Stan share (sourced from the
# repository root): rstan, the data folder, the compiled-model cache, the
# posteriordb data reader and the models' Stan sources.
suppressMessages(library(rstan))
if (!file.exists(rstan_options("boost_lib")) && dir.exists("/usr/include/boost"))
  rstan_options(boost_lib = "/usr/include")  # Debian's r-cran-bh has no headers
shared <- Sys.getenv("SHARED", "../shared")
cache <- "out/stanbench"
dir.create(cache, recursive = TRUE, showWarnings = FALSE)

# posteriordb's data.json as rstan data: JSON arrays become R arrays.
read_json <- function(path) {
  s <- paste(readLines(path, warn = FALSE), collapse = "\n")
  s <- gsub('"([^"]+)"[[:space:]]*:', "`\\1` =", s)
  for (b in c("[", "{")) s <- gsub(b, "list(", s, fixed = TRUE)
  for (b in c("]", "}")) s <- gsub(b, ")", s, fixed = TRUE)
  lapply(eval(parse(text = s)), as_array)
}
as_array <- function(x) {
  if (!is.list(x)) return(x)
  if (length(x) == 0) return(array(numeric(0), 0))
  if (!is.list(x[[1]])) return(array(unlist(x), length(x)))
  e <- lapply(x, as_array)  # rows; R is column-major
  d <- dim(e[[1]])
  aperm(array(unlist(e), c(d, length(e))), c(length(d) + 1, seq_along(d)))
}

# Compile once: the code is copied into the cache (only when it changed, so
# rstan's auto_write .rds next to it stays valid). bench/stan/NAME.stan, a
# Stan 2.21 translation, is used when there is one, else the .shm itself.
compile <- function(code, name) {
  path <- file.path(cache, paste0(name, ".stan"))
  if (!file.exists(path) || !identical(readLines(path), code)) writeLines(code, path)
  stan_model(file = path, auto_write = TRUE)
}
source_of <- function(m) {
  tr <- file.path("bench/stan", paste0(basename(m), ".stan"))
  if (file.exists(tr)) tr else file.path("models/posteriordb", paste0(m, ".shm"))
}
