package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// The test binary doubles as the command that `redlock run` runs: with
// helperEnv set, TestMain calls helperMain instead of running tests.
const (
	helperEnv   = "REDLOCK_TEST_HELPER"
	helperDir   = "REDLOCK_TEST_DIR"   // where the helper writes what it saw
	helperExit  = "REDLOCK_TEST_EXIT"  // the status it exits with
	helperSleep = "REDLOCK_TEST_SLEEP" // how long "interval" holds
)

// helperMain runs one helper mode and returns its exit status:
//
//	hold      write "ready" with the lock's env, then wait (at most a minute)
//	          for SIGTERM, SIGUSR1 or SIGINT, record which, and exit
//	interval  append "start end fence" in Unix nanoseconds, holding for a while
//	exit      exit with $REDLOCK_TEST_EXIT at once
func helperMain(mode string) int {
	dir := os.Getenv(helperDir)
	code, _ := strconv.Atoi(os.Getenv(helperExit))
	switch mode {
	case "hold":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGINT)
		env := fmt.Sprintf("%s %s\n", os.Getenv("REDLOCK_KEY"), os.Getenv("REDLOCK_FENCE"))
		if err := os.WriteFile(dir+"/ready", []byte(env), 0o644); err != nil {
			return 100
		}
		select {
		case s := <-sigs:
			os.WriteFile(dir+"/signal", []byte(s.String()), 0o644)
		case <-time.After(time.Minute):
			return 101
		}
		return code
	case "interval":
		d, err := time.ParseDuration(os.Getenv(helperSleep))
		if err != nil {
			return 102
		}
		start := time.Now()
		time.Sleep(d)
		line := fmt.Sprintf("%d %d %s\n", start.UnixNano(), time.Now().UnixNano(), os.Getenv("REDLOCK_FENCE"))
		f, err := os.OpenFile(dir+"/intervals", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 103
		}
		defer f.Close()
		if _, err := f.WriteString(line); err != nil {
			return 104
		}
		return code
	case "exit":
		return code
	}
	return 105
}
