// Command testapp is the application the real-node tests run. It serves on $PORT (8080):
//
//	GET /       its version, the environment variable VERSION the image sets
//	GET /state  what earlier runs of its container left in $STATE_DIR/prestop (a volume that outlives them)
//
// and exits 0 on SIGTERM. `testapp prestop` is its preStop handler: it appends a line to
// $STATE_DIR/prestop, so a test can see, after the container was restarted, that the handler ran first.
// `testapp exit <code>` is a one-shot task (an ephemeral container's, say): it prints what it is and the
// KRUISE_EJOB_ID it was given, leaves the same line as its termination message, and exits with code.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "prestop" {
		exitOn(recordPreStop())
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "exit" {
		os.Exit(task(os.Args[2]))
	}
	exitOn(serve())
}

// task reports itself on stdout and in the termination message file, and returns the exit code asked for
// (1 when it is not a number).
func task(code string) int {
	n, err := strconv.Atoi(code)
	if err != nil {
		n = 1
	}
	line := fmt.Sprintf("testapp %s: exit %d, KRUISE_EJOB_ID=%s", os.Getenv("VERSION"), n, os.Getenv("KRUISE_EJOB_ID"))
	fmt.Println(line)
	if err := os.WriteFile(env("TERMINATION_LOG", "/dev/termination-log"), []byte(line), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "testapp:", err)
	}
	return n
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "testapp:", err)
		os.Exit(1)
	}
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func preStopFile() string { return filepath.Join(env("STATE_DIR", "/state"), "prestop") }

// recordPreStop appends the time to the preStop file.
func recordPreStop() error {
	f, err := os.OpenFile(preStopFile(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func serve() error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, os.Getenv("VERSION"))
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		data, err := os.ReadFile(preStopFile())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(data)
	})
	srv := &http.Server{Addr: ":" + env("PORT", "8080"), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
