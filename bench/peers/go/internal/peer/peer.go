// Package peer holds what every Go peer benchmark shares (see bench/README.md, "Output protocol"):
// flag parsing with --threads (GOMAXPROCS, default 2), RESULT lines on stdout, failed checks
// (exit status 1), VmRSS and CPU time of the process. GO_PEER_TRACE=<file> runs the program under
// Go's execution tracer (runtime/trace), stopped at the first RESULT line (the measured part is
// over by then): bench/harness/trace_overhead.sh compares its cost with Grove's tracer.
package peer

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bench is one workload's run: its name and the parameters that go into every RESULT line.
type Bench struct {
	Workload string
	Threads  int
	params   map[string]int64
	tracing  *os.File // GO_PEER_TRACE's file while the tracer runs
}

// Start parses the flags declared with flag.Int64 etc. before it, plus --threads, and sets
// GOMAXPROCS. params names the flags that are echoed as extra keys in every RESULT line.
func Start(workload string, params map[string]*int64) *Bench {
	threads := flag.Int("threads", 2, "scheduler threads (GOMAXPROCS)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q\n", workload, flag.Arg(0))
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)
	b := &Bench{Workload: workload, Threads: *threads, params: map[string]int64{}}
	for k, v := range params {
		b.params[k] = *v
	}
	b.params["threads"] = int64(*threads)
	if path := os.Getenv("GO_PEER_TRACE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: GO_PEER_TRACE: %v\n", workload, err)
			os.Exit(2)
		}
		b.tracing = f
	}
	return b
}

// Result prints one protocol line; extra holds keys beyond the parameters (nil for none), each an
// int64 or a float64.
func (b *Bench) Result(metric, unit string, value float64, extra map[string]any) {
	if b.tracing != nil {
		trace.Stop()
		b.tracing.Close()
		b.tracing = nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `RESULT {"workload":%q,"impl":"go","metric":%q,"unit":%q,"value":%s`,
		b.Workload, metric, unit, number(value))
	all := map[string]any{}
	for k, v := range b.params {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := all[k].(type) {
		case int64:
			fmt.Fprintf(&sb, ",%q:%d", k, v)
		case float64:
			fmt.Fprintf(&sb, ",%q:%s", k, number(v))
		default:
			panic(fmt.Sprintf("extra key %q has type %T", k, v))
		}
	}
	sb.WriteString("}\n")
	os.Stdout.WriteString(sb.String())
}

// number is the shortest text that reads back as v; fixed notation in the usual range.
func number(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Fail reports a failed check on stderr and exits with status 1.
func (b *Bench) Fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: check failed: %s\n", b.Workload, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// RSSBytes is VmRSS of this process from /proc/self/status, in bytes.
func RSSBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := s.Text(); strings.HasPrefix(line, "VmRSS:") {
			rest := strings.TrimPrefix(line, "VmRSS:")
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				panic(err)
			}
			return kb * 1024
		}
	}
	panic("no VmRSS in /proc/self/status")
}

// CPUSeconds is user + system time of this process (all threads), from getrusage(RUSAGE_SELF).
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
