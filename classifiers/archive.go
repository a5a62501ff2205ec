package classifiers

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// archiveError is an archive that is not read: corrupt, or refused by a
// limit (a zip bomb). Its message names the archive (and the member
// where reading stopped), never the content.
type archiveError struct {
	name, reason string
}

func (e *archiveError) Error() string { return e.name + ": " + e.reason }

// officeKind reports whether a zip is an Office Open XML or OpenDocument
// file, and which.
func officeKind(data []byte) (string, bool) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", false
	}
	names := map[string]*zip.File{}
	for _, f := range zr.File {
		names[f.Name] = f
	}
	switch {
	case names["word/document.xml"] != nil:
		return "docx", true
	case names["ppt/presentation.xml"] != nil:
		return "pptx", true
	case names["xl/workbook.xml"] != nil:
		return "xlsx", true
	}
	mf := names["mimetype"]
	if mf == nil || names["content.xml"] == nil || mf.UncompressedSize64 > 256 {
		return "", false
	}
	rc, err := mf.Open()
	if err != nil {
		return "", false
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 256))
	mt, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "application/vnd.oasis.opendocument.")
	if !ok {
		return "", false
	}
	switch mt {
	case "text":
		return "odt", true
	case "spreadsheet":
		return "ods", true
	case "presentation":
		return "odp", true
	case "graphics":
		return "odg", true
	}
	return "odf", true
}

// archive reads the members of a zip, tar or gzip archive named name as
// documents, nested archives flattened.
func (r *docReader) archive(ctx context.Context, name, format string, data []byte, depth int) ([]*Document, error) {
	var out []*Document
	add := func(member string, b []byte) error {
		r.members++
		if r.members > maxArchiveMembers {
			return &archiveError{name, fmt.Sprintf("more than %d archive members", maxArchiveMembers)}
		}
		doc, err := r.read(ctx, name+"!"+member, b, depth+1)
		if err != nil {
			return err
		}
		if len(doc.Members) > 0 || (doc.Kind == "zip" || doc.Kind == "tar" || doc.Kind == "gzip") && !doc.Skipped {
			out = append(out, doc.Members...)
		} else {
			out = append(out, doc)
		}
		return nil
	}
	var err error
	switch format {
	case "zip":
		err = r.zipMembers(ctx, name, data, add)
	case "tar":
		err = r.tarMembers(ctx, name, bytes.NewReader(data), add)
	case "gzip":
		err = r.gzipMembers(ctx, name, data, add)
	}
	return out, err
}

// readMember reads one member within the archive limits: the total
// uncompressed size of the file and the compression ratio (compressed is
// the member's compressed size, 0 when not known).
func (r *docReader) readMember(name, member string, rd io.Reader, compressed int64) ([]byte, error) {
	limit := int64(maxExtracted) - r.total
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if int64(len(b)) > limit {
		return nil, &archiveError{name, fmt.Sprintf("uncompressed size over the %d MiB limit at member %s (zip bomb?), refused", maxExtracted>>20, member)}
	}
	if err != nil {
		return nil, &archiveError{name, fmt.Sprintf("corrupt archive at member %s", member)}
	}
	if compressed > 0 && len(b) > minRatioCheck && int64(len(b))/compressed > maxArchiveRatio {
		return nil, &archiveError{name, fmt.Sprintf("member %s expands more than %d times (zip bomb?), refused", member, maxArchiveRatio)}
	}
	r.total += int64(len(b))
	return b, nil
}

func (r *docReader) zipMembers(ctx context.Context, name string, data []byte, add func(string, []byte) error) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return &archiveError{name, "zip archive that cannot be read"}
	}
	if len(zr.File) > maxZipEntries {
		return &archiveError{name, fmt.Sprintf("zip archive with %d entries (limit %d)", len(zr.File), maxZipEntries)}
	}
	for _, f := range zr.File {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f.FileInfo().IsDir() {
			continue
		}
		if f.Flags&0x1 != 0 {
			return &archiveError{name, fmt.Sprintf("encrypted member %s, cannot be read", memberName(f.Name))}
		}
		if f.UncompressedSize64 > uint64(maxExtracted) {
			return &archiveError{name, fmt.Sprintf("member %s declares %d MiB uncompressed, over the %d MiB limit (zip bomb?), refused", memberName(f.Name), f.UncompressedSize64>>20, maxExtracted>>20)}
		}
		rc, err := f.Open()
		if err != nil {
			return &archiveError{name, fmt.Sprintf("member %s cannot be read (unsupported compression or corrupt)", memberName(f.Name))}
		}
		b, err := r.readMember(name, memberName(f.Name), rc, max(int64(f.CompressedSize64), 1))
		rc.Close()
		if err != nil {
			return err
		}
		if err := add(memberName(f.Name), b); err != nil {
			return err
		}
	}
	return nil
}

func (r *docReader) tarMembers(ctx context.Context, name string, rd io.Reader, add func(string, []byte) error) error {
	tr := tar.NewReader(rd)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var ae *archiveError
			if errors.As(err, &ae) {
				return err
			}
			return &archiveError{name, "tar archive that cannot be read"}
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxExtracted {
			return &archiveError{name, fmt.Sprintf("member %s of %d MiB, over the %d MiB limit, refused", memberName(h.Name), h.Size>>20, maxExtracted>>20)}
		}
		b, err := r.readMember(name, memberName(h.Name), tr, 0)
		if err != nil {
			return err
		}
		if err := add(memberName(h.Name), b); err != nil {
			return err
		}
	}
}

// gzipMembers reads a gzip stream: a tar inside is read as a tar, any
// other content as one member named after the archive without ".gz".
func (r *docReader) gzipMembers(ctx context.Context, name string, data []byte, add func(string, []byte) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return &archiveError{name, "gzip stream that cannot be read"}
	}
	zr.Multistream(true)
	b, err := r.readMember(name, "(gzip content)", zr, int64(len(data)))
	if err != nil {
		return err
	}
	if len(b) >= 262 && string(b[257:262]) == "ustar" {
		r.total -= int64(len(b)) // counted again member by member
		return r.tarMembers(ctx, name, bytes.NewReader(b), add)
	}
	base := path.Base(strings.ReplaceAll(name, "!", "/"))
	switch {
	case strings.HasSuffix(base, ".tgz"):
		base = strings.TrimSuffix(base, ".tgz") + ".tar"
	case strings.HasSuffix(base, ".gz"):
		base = strings.TrimSuffix(base, ".gz")
	}
	if zr.Name != "" {
		base = zr.Name
	}
	return add(memberName(base), b)
}

// memberName cleans a member path for display: forward slashes, no
// leading "/" or "./", no "!" (the member separator), printable.
func memberName(n string) string {
	n = strings.TrimLeft(path.Clean("/"+strings.ReplaceAll(n, "\\", "/")), "/")
	n = strings.ReplaceAll(n, "!", "_")
	n = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(n, "_"))
	if n == "" || n == "." {
		return "_"
	}
	return n
}
