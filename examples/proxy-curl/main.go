// Command proxy-curl starts a local paged-cache server on 127.0.0.1:8000
// for the walk-through in this directory's README: aishield proxy in front
// of it, driven with curl.
//
//	go run ./examples/proxy-curl
//
// -addr listens elsewhere (port 0: any free port; the first line printed
// says which).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"

	"github.com/aishield/aishield/pagedcache"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8000", "address to listen on")
	flag.Parse()
	opts, err := pagedcache.Preset("default")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := pagedcache.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		hs.Shutdown(context.Background())
	}()
	fmt.Printf("paged-cache server on http://%s (Ctrl-C to stop)\n", ln.Addr())
	if err := hs.Serve(ln); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
