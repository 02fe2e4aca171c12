package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Slurm runs tasks as a Slurm job array: one array task per calibration
// task, each running "shm calibrate task" on its folder, submitted with
// sbatch --wait so that the search can go on from their results.
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
	Log        io.Writer
}

// roundTasks is the file listing the tasks of one submission.
type roundTasks struct {
	Tasks []Task `json:"tasks"`
}

// Run submits the tasks as one job array and waits for it.
func (s *Slurm) Run(ctx context.Context, tasks []Task) error {
	round := 1
	for ; ; round++ {
		if _, err := os.Stat(s.Dir.path("slurm", fmt.Sprintf("round%02d.json", round))); os.IsNotExist(err) {
			break
		}
	}
	name := fmt.Sprintf("round%02d", round)
	b, err := json.MarshalIndent(roundTasks{Tasks: tasks}, "", "  ")
	if err != nil {
		return err
	}
	list := s.Dir.path("slurm", name+".json")
	if err := writeAtomic(list, append(b, '\n')); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\n# shm calibrate: %d task(s) of %s\nexec %s calibrate task %s %s --index \"$SLURM_ARRAY_TASK_ID\"\n",
		len(tasks), s.Dir, shellQuote(s.Exe), shellQuote(string(s.Dir)), shellQuote(list))
	scriptPath := s.Dir.path("slurm", name+".sh")
	if err := writeAtomic(scriptPath, []byte(script)); err != nil {
		return err
	}
	array := fmt.Sprintf("0-%d", len(tasks)-1)
	if s.MaxRunning > 0 {
		array += "%" + strconv.Itoa(s.MaxRunning)
	}
	args := append([]string{"--wait", "--parsable", "--job-name=shm-calibrate", "--array=" + array,
		"--output=" + s.Dir.path("slurm", name+"_%a.log")}, s.Options...)
	args = append(args, scriptPath)
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if s.Log != nil {
		fmt.Fprintf(s.Log, "sbatch %s\n", strings.Join(args, " "))
	}
	runErr := cmd.Run()
	// sbatch --wait exits non-zero when an array task failed; the tasks'
	// results say which, and their logs why.
	var missing []string
	for i, t := range tasks {
		r, err := s.Dir.ReadResult(t)
		if err != nil {
			return err
		}
		if r == nil {
			missing = append(missing, fmt.Sprintf("lambda %s, dataset %d (log %s)", lambdaText(t.Lambda), t.Dataset+1,
				s.Dir.path("slurm", fmt.Sprintf("%s_%d.log", name, i))))
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("slurm job %s: %d task(s) have no result: %s", strings.TrimSpace(out.String()), len(missing), strings.Join(missing, "; "))
		if runErr != nil {
			msg += fmt.Sprintf(" (sbatch: %v %s)", runErr, strings.TrimSpace(errOut.String()))
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// ReadRound returns task index of a round file written by Slurm.Run.
func ReadRound(path string, index int) (Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Task{}, err
	}
	var r roundTasks
	if err := json.Unmarshal(b, &r); err != nil {
		return Task{}, fmt.Errorf("%s: %w", path, err)
	}
	if index < 0 || index >= len(r.Tasks) {
		return Task{}, fmt.Errorf("%s: task index %d of %d", path, index, len(r.Tasks))
	}
	return r.Tasks[index], nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
