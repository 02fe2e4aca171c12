package calibrate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/shmlang/shm/runtime/data"
)

// SlurmTools are the Slurm commands a Slurm calibration cannot do
// without (sinfo and scontrol only refine its defaults).
func SlurmTools() []string { return []string{"sbatch", "squeue", "scancel"} }

// Slurm runs tasks as Slurm job arrays: each array task runs several
// calibration tasks ("shm calibrate task" on the calibration's folder, in
// one process), the arrays no longer than the cluster's MaxArraySize. It
// waits for the arrays by polling squeue, so that the search can go on
// from their results, and cancels them (scancel) when it stops early:
// interrupted, failed, or killed by SIGTERM. Results do not depend on the
// grouping: a task's result depends only on the plan and the results of
// earlier rounds.
type Slurm struct {
	Dir Dir
	// Exe is the shm binary the array tasks run (an absolute path that
	// the cluster's nodes can reach).
	Exe string
	// Options are extra sbatch options: --partition, --time, --mem, ...
	Options []string
	// MaxRunning bounds the array tasks running at once (the %N of
	// --array); 0 for no bound.
	MaxRunning int
	// RunsPerTask is the number of calibration tasks per array task; 0
	// for about TaskSeconds of work each, from the measured cost of the
	// runs so far (and no fewer array tasks than the cluster has CPUs).
	RunsPerTask int
	// MaxArraySize is the cluster's MaxArraySize (array indices stay
	// below it); 0 asks the cluster (scontrol show config).
	MaxArraySize int
	Log          io.Writer

	cleaned bool // leftover jobs of an earlier process cancelled
}

// TaskSeconds is the work an array task is given by default.
const TaskSeconds = 60

// roundTasks is the file listing the tasks of one submission.
type roundTasks struct {
	Tasks []Task `json:"tasks"`
	// PerTask is the number of tasks each array task runs (0: 1).
	PerTask int `json:"per_task,omitempty"`
}

// pollInterval is how often the arrays' state is asked of squeue.
const pollInterval = time.Second

// Run submits the tasks as job arrays and waits for them.
func (s *Slurm) Run(ctx context.Context, tasks []Task) error {
	if !s.cleaned {
		s.cancelLeftovers()
		s.cleaned = true
	}
	per := s.RunsPerTask
	if per <= 0 {
		cost, ok, err := s.measuredCost()
		if err != nil {
			return err
		}
		if !ok && len(tasks) > 1 {
			// Nothing measured yet: the first task alone measures the
			// cost of a run.
			if err := s.submit(ctx, tasks[:1], 1); err != nil {
				return err
			}
			tasks = tasks[1:]
			if cost, ok, err = s.measuredCost(); err != nil {
				return err
			}
		}
		per = 1
		if ok {
			per = max(1, int(TaskSeconds/max(cost, 1e-3)))
		}
		// No fewer array tasks than CPUs, where that many are wanted.
		per = max(1, min(per, (len(tasks)+s.cpus(ctx)-1)/s.cpus(ctx)))
	}
	return s.submit(ctx, tasks, per)
}

// measuredCost returns the mean time of the runs in the folder so far.
func (s *Slurm) measuredCost() (float64, bool, error) {
	scales, err := s.Dir.scales()
	if err != nil {
		return 0, false, err
	}
	sum, n := 0.0, 0
	for _, l := range scales {
		entries, err := os.ReadDir(s.Dir.path("results", "lambda="+lambdaText(l)))
		if err != nil {
			return 0, false, err
		}
		for _, e := range entries {
			b, err := data.ReadAll(s.Dir.path("results", "lambda="+lambdaText(l), e.Name()))
			var r Result
			if err == nil && strings.HasSuffix(e.Name(), ".json") && json.Unmarshal(b, &r) == nil && r.IsRun() && r.Seconds > 0 {
				sum += r.Seconds
				n++
			}
		}
	}
	if n == 0 {
		return 0, false, nil
	}
	return sum / float64(n), true, nil
}

// cpus returns the number of CPUs of the cluster (sinfo), 1 when it
// cannot tell.
func (s *Slurm) cpus(ctx context.Context) int {
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%C").Output()
	if err != nil {
		return 1
	}
	total := 0
	for _, line := range strings.Fields(string(out)) {
		// allocated/idle/other/total
		f := strings.Split(line, "/")
		if n, err := strconv.Atoi(f[len(f)-1]); err == nil && len(f) == 4 {
			total += n
		}
	}
	return max(total, 1)
}

// maxArraySize returns the cluster's MaxArraySize (Slurm's default, 1001,
// when it cannot tell).
func (s *Slurm) maxArraySize(ctx context.Context) int {
	if s.MaxArraySize > 0 {
		return s.MaxArraySize
	}
	out, err := exec.CommandContext(ctx, "scontrol", "show", "config").Output()
	if err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "=")
			if ok && strings.TrimSpace(k) == "MaxArraySize" {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return 1001
}

// submit runs the tasks, per of them in each array task, as one or more
// job arrays, and waits for them; it cancels them all when ctx is done
// or one cannot be submitted.
func (s *Slurm) submit(ctx context.Context, tasks []Task, per int) error {
	round := 1
	for ; ; round++ {
		if _, err := os.Stat(s.Dir.path("slurm", fmt.Sprintf("round%02d.json", round))); os.IsNotExist(err) {
			break
		}
	}
	name := fmt.Sprintf("round%02d", round)
	b, err := json.MarshalIndent(roundTasks{Tasks: tasks, PerTask: per}, "", "  ")
	if err != nil {
		return err
	}
	list := s.Dir.path("slurm", name+".json")
	if err := writeAtomic(list, append(b, '\n')); err != nil {
		return err
	}
	// The script's argument is the offset of its array's indices.
	script := fmt.Sprintf("#!/bin/sh\n# shm calibrate: %d task(s) of %s, %d per array task\nexec %s calibrate task %s %s --index \"$(( $SLURM_ARRAY_TASK_ID + $1 ))\"\n",
		len(tasks), s.Dir, per, shellQuote(s.Exe), shellQuote(string(s.Dir)), shellQuote(list))
	scriptPath := s.Dir.path("slurm", name+".sh")
	if err := writeAtomic(scriptPath, []byte(script)); err != nil {
		return err
	}
	arrayTasks := (len(tasks) + per - 1) / per
	size := s.maxArraySize(ctx)
	jobsPath := s.Dir.path("slurm", name+".jobs")
	var jobs []string
	cancel := func() {
		if len(jobs) == 0 {
			return
		}
		// Not ctx: it may be the one that is done.
		c, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		out, err := exec.CommandContext(c, "scancel", jobs...).CombinedOutput()
		if s.Log != nil {
			if err != nil {
				fmt.Fprintf(s.Log, "scancel %s: %v %s\n", strings.Join(jobs, " "), err, strings.TrimSpace(string(out)))
			} else {
				fmt.Fprintf(s.Log, "cancelled slurm job(s) %s\n", strings.Join(jobs, " "))
			}
		}
	}
	for offset := 0; offset < arrayTasks; offset += size {
		n := min(size, arrayTasks-offset)
		array := fmt.Sprintf("0-%d", n-1)
		if s.MaxRunning > 0 {
			array += "%" + strconv.Itoa(s.MaxRunning)
		}
		args := append([]string{"--parsable", "--job-name=shm-calibrate", "--array=" + array,
			"--output=" + s.Dir.path("slurm", name+"_%a+"+strconv.Itoa(offset)+".log")}, s.Options...)
		args = append(args, scriptPath, strconv.Itoa(offset))
		if s.Log != nil {
			fmt.Fprintf(s.Log, "sbatch %s\n", strings.Join(args, " "))
		}
		var out, errOut strings.Builder
		// Not ctx: an sbatch stopped midway may have submitted a job
		// whose id it did not print.
		sctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(sctx, "sbatch", args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		stop()
		id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";")
		if err != nil || id == "" {
			cancel()
			os.Remove(jobsPath)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				err = errors.New("no job id in its output")
			}
			if why := strings.TrimSpace(errOut.String()); why != "" {
				err = fmt.Errorf("%w: %s", err, why)
			}
			return fmt.Errorf("sbatch could not submit the array: %w", err)
		}
		jobs = append(jobs, id)
		if err := writeAtomic(jobsPath, []byte(strings.Join(jobs, "\n")+"\n")); err != nil {
			cancel()
			return err
		}
		if ctx.Err() != nil {
			cancel()
			os.Remove(jobsPath)
			return ctx.Err()
		}
	}
	if err := s.wait(ctx, jobs); err != nil {
		cancel()
		os.Remove(jobsPath)
		return err
	}
	os.Remove(jobsPath)
	// The results say which tasks failed, and their logs why.
	plan, err := s.Dir.ReadPlan()
	if err != nil {
		return err
	}
	var missing []string
	for i, t := range tasks {
		r, err := s.Dir.ReadResult(t, plan)
		if err != nil {
			return err
		}
		if r == nil {
			a := i / per
			missing = append(missing, fmt.Sprintf("lambda %s, dataset %d (log %s)", lambdaText(t.Lambda), t.Dataset+1,
				s.Dir.path("slurm", fmt.Sprintf("%s_%d+%d.log", name, a%size, a/size*size))))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("slurm job(s) %s: %d task(s) have no result: %s", strings.Join(jobs, ", "), len(missing), strings.Join(missing, "; "))
	}
	return nil
}

// wait polls squeue until none of the jobs is queued or running.
func (s *Slurm) wait(ctx context.Context, jobs []string) error {
	list := strings.Join(jobs, ",")
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
		out, err := exec.CommandContext(ctx, "squeue", "-h", "-j", list, "-o", "%i").CombinedOutput()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && strings.Contains(string(out), "Invalid job id"):
			return nil // finished and purged
		case err != nil:
			failures++
			if failures >= 30 {
				return fmt.Errorf("squeue: %v %s", err, strings.TrimSpace(string(out)))
			}
		case strings.TrimSpace(string(out)) == "":
			return nil
		default:
			failures = 0
		}
	}
}

// cancelLeftovers cancels the jobs that an earlier process on this
// folder submitted and did not see finish (it was killed): they would go
// on writing results behind this one's back.
func (s *Slurm) cancelLeftovers() {
	entries, _ := os.ReadDir(s.Dir.path("slurm"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "round") || !strings.HasSuffix(e.Name(), ".jobs") {
			continue
		}
		p := s.Dir.path("slurm", e.Name())
		b, err := data.ReadAll(p)
		if err != nil {
			continue
		}
		if jobs := strings.Fields(string(b)); len(jobs) > 0 {
			c, stop := context.WithTimeout(context.Background(), 30*time.Second)
			exec.CommandContext(c, "scancel", jobs...).Run()
			stop()
			if s.Log != nil {
				fmt.Fprintf(s.Log, "cancelled slurm job(s) %s left by an earlier run of this calibration\n", strings.Join(jobs, " "))
			}
		}
		os.Remove(p)
	}
}

// ReadRound returns the tasks that array task index of a round file
// written by Slurm.Run runs.
func ReadRound(path string, index int) ([]Task, error) {
	b, err := data.ReadAll(path)
	if err != nil {
		return nil, err
	}
	var r roundTasks
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	per := max(r.PerTask, 1)
	n := (len(r.Tasks) + per - 1) / per
	if index < 0 || index >= n {
		return nil, fmt.Errorf("%s: array task index %d of %d", path, index, n)
	}
	return r.Tasks[index*per : min((index+1)*per, len(r.Tasks))], nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
