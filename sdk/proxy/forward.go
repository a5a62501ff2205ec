package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// forward sends the API request r of call c to rt's destination through
// the guard's Transport and writes the answer to c.w. It is a reverse
// proxy written for this one use, with the header rules of
// httputil.ReverseProxy (hop-by-hop headers dropped both ways, Forwarded
// and X-Forwarded-* from the caller dropped, unparsable query parameters
// re-encoded, no default User-Agent) and the proxy's own (routing, the
// principal header and caller key dropped, no upgrades, no trailers either
// way: only what the guard parsed and checked is sent). A non-streamed
// answer is written at once; a stream is flushed after every write.
func (p *Proxy) forward(ctx context.Context, rt *route, c *call, r *http.Request) {
	out, err := p.outbound(ctx, rt, c, r)
	if err != nil {
		p.errorHandler(c.w, r.WithContext(ctx), err)
		return
	}
	resp, err := rt.tr.RoundTrip(out)
	if err != nil {
		p.errorHandler(c.w, out, err)
		return
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// No upgrade was asked for (the Upgrade header is never passed on).
		resp.Body.Close()
		p.errorHandler(c.w, out, errors.New("the upstream switched protocols, which the proxy does not forward"))
		return
	}
	removeHopByHop(resp.Header)
	p.modifyResponse(c, resp)
	h := c.w.Header()
	for k, vv := range resp.Header {
		if len(h[k]) == 0 {
			h[k] = vv // resp is this call's own: its slices are not shared
		} else {
			h[k] = append(h[k], vv...)
		}
	}
	c.w.WriteHeader(resp.StatusCode)
	if err := p.copyBody(c.w, resp); err != nil {
		resp.Body.Close()
		// The status and part of the body are out: all that is left is to
		// abort the response, so that the client sees it incomplete.
		panic(http.ErrAbortHandler)
	}
	resp.Body.Close()
}

// outbound builds the request sent to rt's destination for r: the URL of
// the destination's base and the call's path, r's query (unparsable
// parameters re-encoded) and the end-to-end headers of r. Its body is r's
// (read whole by the guard's Transport, which clones the request again
// before it changes anything).
func (p *Proxy) outbound(ctx context.Context, rt *route, c *call, r *http.Request) (*http.Request, error) {
	if up, ok := upgradeType(r.Header); ok && !printableASCII(up) {
		return nil, fmt.Errorf("client tried to switch to invalid protocol %q", up)
	}
	u := *rt.base
	u.Path = strings.TrimSuffix(rt.base.Path, "/") + c.rest
	u.RawPath = ""
	u.RawQuery = cleanQuery(r.URL.RawQuery)
	u.Fragment, u.RawFragment = "", ""
	out := r.WithContext(ctx) // a shallow copy, whose shared fields are all replaced below
	out.URL, out.Host, out.RequestURI = &u, "", ""
	out.Header = p.forwardedHeader(r)
	out.Trailer, out.TransferEncoding = nil, nil
	out.Form, out.PostForm, out.MultipartForm = nil, nil, nil
	out.Close = false
	if r.ContentLength == 0 {
		out.Body = nil // lets http.Transport retry on a stale connection
	}
	out.GetBody = nil
	return out, nil
}

// hopHeaders are the hop-by-hop headers (RFC 9110 section 7.6.1, and the
// historical ones): never forwarded, either way.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forwardedHeader is the header of the request forwarded for r: r's
// headers without the hop-by-hop ones (those the Connection header names
// included), without what the caller claims of addresses (Forwarded,
// X-Forwarded-*, X-Real-IP...), the principal header and the caller key;
// with "Te: trailers" when the caller accepts trailers, an empty
// User-Agent when the caller sent none (no Go default), and
// X-Forwarded-For, -Host and -Proto from the connection when
// Options.ForwardClientAddress is set.
func (p *Proxy) forwardedHeader(r *http.Request) http.Header {
	nv := 0
	for _, vv := range r.Header {
		nv += len(vv)
	}
	h := make(http.Header, len(r.Header)+1)
	vals := make([]string, nv) // one backing array, as Header.Clone
	for k, vv := range r.Header {
		if vv == nil {
			continue
		}
		n := copy(vals, vv)
		h[k] = vals[:n:n]
		vals = vals[n:]
	}
	removeHopByHop(h)
	for _, k := range droppedHeaders {
		h.Del(k)
	}
	h.Del(p.opts.PrincipalHeader)
	if containsToken(r.Header["Te"], "trailers") {
		h["Te"] = []string{"trailers"}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""}
	}
	if p.opts.ForwardClientAddress {
		if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			h["X-Forwarded-For"] = []string{ip}
		}
		h["X-Forwarded-Host"] = []string{r.Host}
		proto := "http"
		if r.TLS != nil {
			proto = "https"
		}
		h["X-Forwarded-Proto"] = []string{proto}
	}
	return h
}

// removeHopByHop deletes from h the hop-by-hop headers and those its
// Connection header names.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// upgradeType is the protocol a request asks to switch to: its Upgrade
// header, when its Connection header names "upgrade".
func upgradeType(h http.Header) (string, bool) {
	if !containsToken(h["Connection"], "upgrade") {
		return "", false
	}
	return h.Get("Upgrade"), true
}

// containsToken reports whether the comma-separated header values vv hold
// token (ASCII case-insensitive).
func containsToken(vv []string, token string) bool {
	for _, v := range vv {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(t), token) {
				return true
			}
		}
	}
	return false
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// maxQueryParams is net/url's default bound on the parameters of a query.
const maxQueryParams = 10000

// cleanQuery returns the raw query q, re-encoded from its parsed
// parameters when some cannot be parsed (a ';' separator, a bad escape,
// too many parameters): those are dropped rather than passed to an
// upstream that might read them differently.
func cleanQuery(q string) string {
	reencode := func() string {
		v, _ := url.ParseQuery(q)
		return v.Encode()
	}
	if strings.Count(q, "&")+1 > maxQueryParams {
		return reencode()
	}
	for i := 0; i < len(q); {
		switch q[i] {
		case ';':
			return reencode()
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return reencode()
			}
			i += 3
		default:
			i++
		}
	}
	return q
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// copyBody writes resp's body to w. A body of known length that is not an
// event stream (the guard's verified answer, an error the proxy renders)
// is written as it comes, in one write when it is in memory; anything else
// is flushed after every write, so that a stream's events reach the
// client as the guard releases them.
func (p *Proxy) copyBody(w *statusRecorder, resp *http.Response) error {
	if resp.ContentLength >= 0 && !isEventStream(resp.Header.Get("Content-Type")) {
		if wt, ok := resp.Body.(io.WriterTo); ok {
			_, err := wt.WriteTo(w)
			return err
		}
	}
	bp := copyBuffers.Get()
	defer copyBuffers.Put(bp)
	buf := *bp
	flush := http.NewResponseController(w)
	for {
		n, rerr := resp.Body.Read(buf)
		if rerr != nil && rerr != io.EOF && !errors.Is(rerr, context.Canceled) {
			p.errLog.Printf("aishield proxy: reading the upstream body failed: %v", scrub(rerr))
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if err := flush.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// isEventStream reports whether the media type ct, parameters aside, is
// text/event-stream.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(textproto.TrimString(mt), "text/event-stream")
}
