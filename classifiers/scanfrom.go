package classifiers

import "context"

// ScanFrom is Scan reporting only the findings that start at or after
// from. The text before from is read as Scan reads it (the context words
// and labels before a value, the start of a value that reaches past from),
// so the findings returned are exactly those of Scan that start at or
// after from; the findings that start before from are neither hashed nor
// returned. A caller that scans again a text it has already decided up to
// from, for the context of what follows, pays only for the findings it does
// not have. from is clamped to [0, len(text)].
func (s *Scanner) ScanFrom(ctx context.Context, text []byte, from int) ([]Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	from = min(max(from, 0), len(text))
	if len(text) > s.chunk {
		fs, err := s.Scan(ctx, text)
		return findingsFrom(fs, from), err
	}
	fs, err := s.scanChunk(ctx, text, from, len(text), newPosTracker(), 0)
	return sortFindings(fs), err
}

// ScanPartialFrom is ScanPartial reporting only the findings that start at
// or after from, as ScanFrom is to Scan: the findings and the settled
// offset are those of ScanPartial, less its findings that start before
// from.
func (s *Scanner) ScanPartialFrom(ctx context.Context, text []byte, from int, opts PartialOptions) (fs []Finding, settled int, err error) {
	from = min(max(from, 0), len(text))
	if len(text) > s.chunk {
		fs, settled, err = s.ScanPartial(ctx, text, opts)
		return findingsFrom(fs, from), settled, err
	}
	part := opts.Scratch.partial()
	fs, err = s.scanChunkRaw(ctx, text, from, len(text), newPosTracker(), 0, part)
	settled = s.settleView(text, part, opts)
	part.view = nil // the view's text is not kept for the next call
	return sortFindings(fs), settled, err
}

// PartialScratch is working memory that the scans of one caller reuse
// (PartialOptions.Scratch): the candidates a partial scan records for its
// settled point. It holds nothing from one call to the next and is not
// safe for concurrent use.
type PartialScratch struct {
	part  partialScan
	spans []rawSpan // settleView's spans mapped to the text
}

// partial returns the recorded state of a partial scan, emptied: the
// scratch's own, or a new one when sc is nil.
func (sc *PartialScratch) partial() *partialScan {
	if sc == nil {
		return new(partialScan)
	}
	p := &sc.part
	p.spans, p.hits, p.view = p.spans[:0], p.hits[:0], nil
	return p
}

// findingsFrom returns the findings of fs (sorted by Start) that start at
// or after from.
func findingsFrom(fs []Finding, from int) []Finding {
	i := 0
	for i < len(fs) && fs[i].Start < from {
		i++
	}
	if i == len(fs) {
		return nil
	}
	return fs[i:]
}
