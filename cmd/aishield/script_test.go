package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the testscript scripts under testdata/script run the real
// aishield command in a subprocess as "aishield".
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"aishield": func() { os.Exit(runMain()) },
	})
}

// TestScripts runs every testdata/script/*.txtar file: each is a small shell
// session with the files it needs and the output it expects.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: false,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkbin":     cmdMkbin,
			"mkarchive": cmdMkarchive,
		},
	})
}

// cmdMkbin writes a binary file: an ELF header, bytes of every value, and
// the content of each file named, each between NUL bytes, as a linker
// lays strings out.
//
//	mkbin OUT FILE...
func cmdMkbin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkbin OUT FILE...")
	}
	var b bytes.Buffer
	b.WriteString("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00")
	for i := range 512 {
		b.WriteByte(byte(i * 37))
	}
	for _, f := range args[1:] {
		b.WriteString("\x00\x00")
		b.WriteString(ts.ReadFile(f))
		b.WriteString("\x00")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644))
}

// cmdMkarchive writes an archive of the named files, each stored under
// NAME (or its own path): zip, tar, tar.gz or gz after OUT's extension.
//
//	mkarchive OUT [NAME=]FILE...
func cmdMkarchive(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mkarchive OUT [NAME=]FILE...")
	}
	type member struct{ name, data string }
	var ms []member
	for _, a := range args[1:] {
		name, file, ok := strings.Cut(a, "=")
		if !ok {
			file = name
		}
		ms = append(ms, member{name, ts.ReadFile(file)})
	}
	var b bytes.Buffer
	out := args[0]
	tarOf := func() []byte {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		for _, m := range ms {
			ts.Check(tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}))
			tw.Write([]byte(m.data))
		}
		ts.Check(tw.Close())
		return tb.Bytes()
	}
	switch {
	case strings.HasSuffix(out, ".zip"):
		zw := zip.NewWriter(&b)
		for _, m := range ms {
			w, err := zw.Create(m.name)
			ts.Check(err)
			w.Write([]byte(m.data))
		}
		ts.Check(zw.Close())
	case strings.HasSuffix(out, ".tar"):
		b.Write(tarOf())
	case strings.HasSuffix(out, ".tar.gz"), strings.HasSuffix(out, ".tgz"), strings.HasSuffix(out, ".gz"):
		data := []byte(ms[0].data)
		if !strings.HasSuffix(out, ".gz") || strings.HasSuffix(out, ".tar.gz") {
			data = tarOf()
		}
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		ts.Check(zw.Close())
	default:
		ts.Fatalf("mkarchive: unknown archive type of %s", out)
	}
	ts.Check(os.WriteFile(ts.MkAbs(out), b.Bytes(), 0o644))
}
