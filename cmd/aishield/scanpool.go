package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/inputfile"
	"github.com/mattn/go-isatty"
)

// scanSink writes the report as the scan goes, in input order: each file
// reported is begun, its findings are handed on (for a file too large to
// hold, a chunk at a time), and it is ended once its decision is made;
// finish writes what follows the files.
type scanSink interface {
	beginFile(res *fileResult) error
	findings(res *fileResult, fs []classifiers.Finding) error
	endFile(res *fileResult) error
	finish(rep *scanReport) error
}

// scanOutcome is what a worker made of one input.
type scanOutcome struct {
	results []*fileResult
	// large is an input too large to hold, left for the report's
	// goroutine to stream when its turn comes.
	large *largeInput
	// inline and baselined count the findings the worker suppressed.
	inline, baselined int
	err               error
}

// largeInput is an input over maxWholeFile, open and not yet read past
// what r gives back.
type largeInput struct {
	name  string
	r     io.Reader
	close func()
}

// scanJob is one input on its way through the pool.
type scanJob struct {
	in  scanInput
	out scanOutcome
}

// Files are handed to the workers in batches of consecutive inputs: a
// worker takes a batch, scans its files one after the other and puts the
// outcomes in the batch's slot, so that thousands of small files cost a
// few hundred hand-overs between goroutines rather than several each.
const (
	// maxBatch is the most inputs of a batch. Once the walk is over the
	// batches get smaller towards the end, down to one input, so that
	// every core has some to the last.
	maxBatch = 32
	// batchesAhead bounds, per worker, the batches scanned ahead of the
	// report: their findings wait for it.
	batchesAhead = 4
)

// scanPool scans the inputs of runScan on GOMAXPROCS workers while the
// walk finds them, and reports them in order. There is no goroutine of
// its own for the report: the worker that completes the batch the report
// waits for reports it, and the batches after it already done, while the
// others keep scanning; so a worker never waits for another unless it is
// a whole window of batches ahead of the report.
type scanPool struct {
	workers int
	window  int // batches taken and not yet reported, at most

	mu   sync.Mutex
	cond sync.Cond // signalled when inputs, walked or reported change
	// inputs are those the walk found so far, walked says it is over;
	// next is the first input not yet in a batch.
	inputs []scanInput
	walked bool
	next   int
	// taken counts the batches handed to workers, reported those
	// reported; slots holds, for each batch in between, its jobs once
	// scanned (nil until then).
	taken, reported int
	slots           [][]scanJob
	// reporting says a worker is reporting: the others leave their
	// batches in slots for it.
	reporting bool

	// report writes one batch, in order; it runs on one worker at a time.
	report func(jobs []scanJob)
}

// add appends inputs found by the walk; done says the walk is over.
func (p *scanPool) add(ins []scanInput, done bool) {
	p.mu.Lock()
	p.inputs = append(p.inputs, ins...)
	p.walked = p.walked || done
	p.mu.Unlock()
	p.cond.Broadcast()
}

// take returns the next batch to scan and its number, waiting while the
// window is full or the walk has not found a whole batch; ok is false
// when there is none left or stop says to stop.
func (p *scanPool) take(stop func() bool) (b int, batch []scanInput, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if stop() {
			return 0, nil, false
		}
		avail := len(p.inputs) - p.next
		switch {
		case p.walked && avail == 0:
			return 0, nil, false
		case p.taken-p.reported >= p.window, !p.walked && avail < maxBatch:
			p.cond.Wait()
			continue
		}
		n := maxBatch
		if p.walked {
			n = min(maxBatch, max(1, avail/(2*p.workers)))
		}
		batch = p.inputs[p.next : p.next+n : p.next+n]
		p.next += n
		p.taken++
		return p.taken - 1, batch, true
	}
}

// done puts the scanned batch b in its slot and, unless another worker is
// reporting, reports every batch done from the one the report waits for.
func (p *scanPool) done(b int, jobs []scanJob) {
	p.mu.Lock()
	p.slots[b%p.window] = jobs
	if p.reporting {
		p.mu.Unlock()
		return
	}
	p.reporting = true
	for {
		k := p.reported % p.window
		next := p.slots[k]
		if next == nil {
			break
		}
		p.slots[k] = nil
		p.mu.Unlock()
		p.report(next)
		p.mu.Lock()
		p.reported++
		p.cond.Broadcast()
	}
	p.reporting = false
	p.mu.Unlock()
}

// heldOutput holds what the report writes on the error output while the
// walk, which writes its own errors there, is going on, and writes it
// once the walk is over: the messages come in the order of a walk
// followed by the scan.
type heldOutput struct {
	mu     sync.Mutex
	w      io.Writer
	walked bool
	held   bytes.Buffer
}

func (h *heldOutput) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.walked {
		return h.held.Write(b)
	}
	return h.w.Write(b)
}

// release writes what was held; what comes after is written at once.
func (h *heldOutput) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.walked = true
	h.w.Write(h.held.Bytes())
	h.held = bytes.Buffer{}
}

// runScan walks the inputs of args (walkInputs, the rules of scanInputs)
// and scans them as they are found on GOMAXPROCS workers (scanPool), a
// few batches of inputs ahead of the report at most, which sees them in
// the order of the inputs: the order, output and counts of a walk
// followed by a scan of one file after the other. An archive gives a
// result per member. Findings on an aishield:allow line, and those whose
// fingerprint is in the baseline, are dropped and counted. The worker
// decides each file for sp's destination while its text is at hand; a
// file too large to hold is streamed when its turn to be reported comes,
// and decided from its findings as they pass. Reported files go to sink
// (nil: their findings are kept in rep.Files, for SARIF). Unreadable
// inputs are reported on errOut. When ctx is done the scan stops and
// rep.Interrupted is set.
func runScan(ctx context.Context, sc *classifiers.Scanner, args []string, opts scanOptions, stdin io.Reader, errOut io.Writer, sp *scanPolicy, sink scanSink) *scanReport {
	rep := &scanReport{Keyed: opts.keyed}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0))
	p := &scanPool{workers: workers, window: batchesAhead * workers}
	p.cond.L = &p.mu
	p.slots = make([][]scanJob, p.window)
	out := &heldOutput{w: errOut}

	var wg sync.WaitGroup
	var skipped []notScanned
	var ignored, errs int
	total := -1 // the number of inputs, once the walk is over
	var progress bool
	wg.Go(func() {
		var found []scanInput
		skipped, ignored, errs = walkInputs(args, opts.inputOptions, errOut, func(in scanInput) {
			if found = append(found, in); len(found) == maxBatch {
				p.add(found, false)
				found = found[:0]
			}
		})
		p.add(found, true)
		terminal := isTerminal(errOut)
		p.mu.Lock()
		total = len(p.inputs)
		progress = total > progressThreshold && terminal
		p.mu.Unlock()
		out.release()
	})
	i := 0
	p.report = func(jobs []scanJob) {
		p.mu.Lock()
		n, show := total, progress
		p.mu.Unlock()
		for k := range jobs {
			j := &jobs[k]
			if inner.Err() == nil {
				if show && i%50 == 0 {
					fmt.Fprintf(out, "\rscanning %d/%d files", i, n)
				}
				report(inner, sc, j, opts, out, sp, sink, rep)
				if rep.WriteErr != nil {
					cancel()
				}
			}
			if j.out.large != nil {
				j.out.large.close()
			}
			i++
		}
	}
	stop := func() bool { return inner.Err() != nil }
	for range workers {
		wg.Go(func() {
			var rd fileReader
			for {
				b, batch, ok := p.take(stop)
				if !ok {
					return
				}
				jobs := make([]scanJob, len(batch))
				for k, in := range batch {
					jobs[k] = scanJob{in: in, out: scanWorker(inner, sc, in, stdin, opts, sp, &rd)}
				}
				p.done(b, jobs)
			}
		})
	}
	wg.Wait()
	if progress {
		fmt.Fprintf(errOut, "\rscanned %d files%20s\n", total, "")
	}
	rep.NotScanned = append(skipped, rep.NotScanned...)
	rep.Ignored = ignored
	rep.Errors += errs
	rep.Interrupted = ctx.Err() != nil
	return rep
}

// scanWorker scans one input and, for each file of it, suppresses the
// findings the user allowed and decides it for sp's destination, with its
// text at hand; the texts are dropped before the outcome is handed on.
func scanWorker(ctx context.Context, sc *classifiers.Scanner, in scanInput, stdin io.Reader, opts scanOptions, sp *scanPolicy, rd *fileReader) scanOutcome {
	if ctx.Err() != nil {
		return scanOutcome{}
	}
	results, large, err := scanOne(ctx, sc, in, stdin, rd)
	// The text of a file may be rd's buffer, which the next file reuses.
	defer func() {
		for _, res := range results {
			res.text = ""
		}
	}()
	out := scanOutcome{large: large, err: err}
	if err != nil || large != nil {
		return out
	}
	for k, res := range results {
		if ctx.Err() != nil {
			out.results = results[:k]
			return out
		}
		if res.Skipped {
			continue
		}
		var n int
		res.Findings, n = suppressInline(res.text, res.Findings)
		out.inline += n
		res.Findings, n = opts.baseline.filter(res.Path, res.Findings)
		out.baselined += n
		if opts.endColumns {
			res.endCols = endColumns(res.text, res.Findings)
		}
		if err = sp.onFile(ctx, res); err != nil {
			out.results, out.err = results[:k], err
			return out
		}
	}
	out.results = results
	return out
}

// filter drops the findings whose fingerprint is in the baseline and
// returns how many it dropped.
func (b baseline) filter(path string, fs []classifiers.Finding) ([]classifiers.Finding, int) {
	if b == nil {
		return fs, 0
	}
	kept := fs[:0]
	for _, x := range fs {
		if b[findingFingerprint(path, x)] {
			continue
		}
		kept = append(kept, x)
	}
	return kept, len(fs) - len(kept)
}

// report adds one input's outcome to rep and writes it to sink.
func report(ctx context.Context, sc *classifiers.Scanner, j *scanJob, opts scanOptions, errOut io.Writer, sp *scanPolicy, sink scanSink, rep *scanReport) {
	o := &j.out
	var nr *errNotRegular
	if errors.As(o.err, &nr) && j.in.walked {
		rep.NotScanned = append(rep.NotScanned, notScanned{Path: j.in.path, Reason: nr.kind})
		return
	}
	rep.Inline += o.inline
	rep.Baselined += o.baselined
	err := o.err
	for _, res := range o.results {
		if res.Skipped {
			rep.NotScanned = append(rep.NotScanned, notScanned{Path: res.Path, Reason: res.Note, Unreadable: true})
			continue
		}
		if rep.WriteErr = rep.add(res, sp, sink, res.Findings); rep.WriteErr == nil {
			rep.WriteErr = rep.end(res, sink)
		}
		if rep.WriteErr != nil {
			return
		}
	}
	if o.large != nil && err == nil {
		err = reportLarge(ctx, sc, o.large, opts, sp, sink, rep)
		if rep.WriteErr != nil {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		fmt.Fprintf(errOut, "aishield: %s: %v\n", j.in.path, err)
		rep.Errors++
	}
}

// add counts findings of res and hands them to sink: all of them for a
// held file (which add begins), a chunk's for a streamed one (begun by
// reportLarge). Without a sink they are kept.
func (rep *scanReport) add(res *fileResult, sp *scanPolicy, sink scanSink, fs []classifiers.Finding) error {
	if len(fs) > 0 {
		if res.count == 0 {
			rep.WithFindings++
		}
		res.count += len(fs)
		rep.Found += len(fs)
		if !rep.FailOn && sp.failsOn(fs) {
			rep.FailOn = true
		}
	}
	if sink == nil {
		if res.streamed {
			res.Findings = append(res.Findings, fs...)
		}
		return nil
	}
	if !res.streamed {
		if err := sink.beginFile(res); err != nil {
			return err
		}
	}
	return sink.findings(res, fs)
}

// end ends res: it is written and kept in rep.Files, its findings only
// without a sink.
func (rep *scanReport) end(res *fileResult, sink scanSink) error {
	if sink != nil {
		if err := sink.endFile(res); err != nil {
			return err
		}
		res.Findings = nil
	}
	rep.Files = append(rep.Files, *res)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// fileReader reads the files of one worker into the same buffer, one
// after the other: the scan keeps nothing of the bytes it is given (its
// results hold copies), so the buffer serves the next file.
type fileReader struct {
	buf []byte
}

// readOpened reads the regular file at path whole into rd's buffer, opened
// with openScanFile; a file over maxWholeFile is returned open as f, to be
// streamed.
func (rd *fileReader) readOpened(path string) (data []byte, f *os.File, err error) {
	f, st, err := openScanFile(path)
	if err != nil {
		return nil, nil, err
	}
	if st.Size() > maxWholeFile {
		return nil, f, nil
	}
	defer f.Close()
	data, err = rd.read(f, st.Size())
	return data, nil, err
}

// maxKeptBuffer is the largest buffer a fileReader keeps for the next
// file; a larger file's buffer is dropped once it is scanned.
const maxKeptBuffer = 4 << 20

// read reads f, a regular file of size bytes when it was opened, to its
// end. A file that grew meanwhile is read all the same, up to
// maxWholeFile+1 bytes (the caller streams a longer one).
//
// The end is a read that returns nothing, or one that returns fewer bytes
// than asked and makes exactly size bytes: a file is read with one read,
// not two. A read returning nothing after it would give the same bytes
// unless the file grew in between, which is a file that grew once it was
// read. A file system that returns short reads before the end, or a file
// of /proc (whose size is 0), is still read to its end.
func (rd *fileReader) read(f io.Reader, size int64) ([]byte, error) {
	buf := rd.buf[:0]
	if want := int(size) + 1; cap(buf) < want { // +1: room for the read that sees the end
		buf = make([]byte, 0, max(want, 4<<10))
	}
	for len(buf) <= maxWholeFile {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		ask := buf[len(buf):min(cap(buf), maxWholeFile+1)]
		n, err := f.Read(ask)
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if n > 0 && n < len(ask) && int64(len(buf)) == size {
			break
		}
	}
	if cap(buf) <= maxKeptBuffer { // never a file streamed: maxKeptBuffer < maxWholeFile
		rd.buf = buf
	}
	return buf, nil
}

// scanOne scans one input: a file, or a stream ("-" is standard input)
// read as it comes, whole up to maxWholeFile. A larger input is returned
// open, as large, to be streamed (reportLarge). Reads waiting on a pipe or
// a terminal end when ctx is done. A regular file is read into rd's
// buffer.
func scanOne(ctx context.Context, sc *classifiers.Scanner, in scanInput, stdin io.Reader, rd *fileReader) (_ []*fileResult, large *largeInput, err error) {
	name := in.path
	var r io.Reader
	var closer func()
	defer func() {
		if large == nil && closer != nil {
			closer()
		}
	}()
	switch {
	case in.path == "-":
		cr, stop := contextReader(ctx, stdin)
		r, closer = cr, stop
	case in.stream:
		f, err := inputfile.Open(ctx, in.path)
		if err != nil {
			return nil, nil, err
		}
		r, closer = f, func() { f.Close() }
	}
	var data []byte
	switch {
	case r == nil: // a regular file
		var f *os.File
		if data, f, err = rd.readScanFile(in.path); err != nil {
			return nil, nil, err
		}
		if f != nil {
			return nil, &largeInput{name: name, r: f, close: func() { f.Close() }}, nil
		}
	default:
		data, err = inputfile.ReadUpTo(r, 0, maxWholeFile+1)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxWholeFile { // a stream can be of any size
		return nil, &largeInput{name: name, r: io.MultiReader(bytes.NewReader(data), r), close: closer}, nil
	}
	base := filepath.Base(name)
	// A plain text's Text is data, which rd reuses for the next file:
	// scanWorker drops it first.
	doc, err := sc.ScanDocumentNoCopy(ctx, base, data)
	if err != nil {
		return nil, nil, err
	}
	if doc.Members == nil {
		return []*fileResult{{Path: name, Kind: doc.Kind, Skipped: doc.Skipped, Note: doc.Note, Findings: doc.Findings, text: doc.Text}}, nil, nil
	}
	// An archive: a result per member, named PATH!MEMBER.
	out := make([]*fileResult, 0, len(doc.Members))
	for _, m := range doc.Members {
		out = append(out, &fileResult{Path: name + strings.TrimPrefix(m.Name, base), Kind: m.Kind, Skipped: m.Skipped, Note: m.Note, Findings: m.Findings, text: m.Text})
	}
	return out, nil, nil
}

// streamMemoryLimit is the soft limit of the Go heap (see
// runtime/debug.SetMemoryLimit) while a large input is streamed: its
// findings are not kept and the chunks in flight are few, so the heap
// needs little more than the scanner itself, and the collector, paced by
// default to let the heap grow to twice what it keeps, returns the
// difference instead. A limit set with GOMEMLIMIT is left as it is.
const streamMemoryLimit = 40 << 20

// limitMemory sets streamMemoryLimit and returns the function that puts
// the previous limit back.
func limitMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(streamMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}

// reportLarge streams a large input as text unless its start looks
// binary, reporting its findings a chunk at a time: its memory does not
// grow with the input nor with its findings. Its decision for sp's
// destination is made from the findings as they pass (streamDecision).
func reportLarge(ctx context.Context, sc *classifiers.Scanner, in *largeInput, opts scanOptions, sp *scanPolicy, sink scanSink, rep *scanReport) error {
	head := make([]byte, 8<<10)
	n, err := io.ReadFull(in.r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return err
	}
	head = head[:n]
	doc, err := sc.ScanDocument(ctx, in.name, head)
	if err != nil {
		return err
	}
	if doc.Skipped || doc.Kind != "text" {
		rep.NotScanned = append(rep.NotScanned, notScanned{Path: in.name, Unreadable: true,
			Reason: fmt.Sprintf("%s file larger than %d MiB: only text is read at this size", doc.Kind, maxWholeFile>>20)})
		return nil
	}
	defer limitMemory()()
	res := &fileResult{Path: in.name, Kind: "text", streamed: true}
	dec := sp.streamDecision()
	if sink != nil {
		if rep.WriteErr = sink.beginFile(res); rep.WriteErr != nil {
			return nil
		}
	}
	err = sc.ScanReaderEach(ctx, io.MultiReader(bytes.NewReader(head), in.r), func(fs []classifiers.Finding) error {
		fs, n := opts.baseline.filter(res.Path, fs)
		rep.Baselined += n
		dec.add(fs)
		if werr := rep.add(res, sp, sink, fs); werr != nil {
			rep.WriteErr = werr
			return werr
		}
		return nil
	})
	if rep.WriteErr != nil {
		return nil
	}
	res.Decision = dec.decision()
	rep.WriteErr = rep.end(res, sink)
	return err
}
