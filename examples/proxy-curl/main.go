// Command proxy-curl starts a local paged-cache server on 127.0.0.1:8000
// for the walk-through in this directory's README: aishield proxy in front
// of it, driven with curl.
//
//	go run ./examples/proxy-curl
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"

	"github.com/aishield/aishield/pagedcache"
)

func main() {
	opts, err := pagedcache.Preset("default")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := pagedcache.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Addr: "127.0.0.1:8000", Handler: srv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		hs.Shutdown(context.Background())
	}()
	fmt.Println("paged-cache server on http://127.0.0.1:8000 (Ctrl-C to stop)")
	if err := hs.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
