package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/internal/sse"
	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/verify"
)

// maxCapture bounds the captured files verify reads.
const maxCapture = 64 << 20

func newVerifyCmd() *cobra.Command {
	var reqPath, respPath, policyRef string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify --request FILE --response FILE",
		Short: "Check a captured exchange's response for foreign material",
		Long: `verify checks a captured exchange: the request body (OpenAI or Anthropic JSON)
and its response (JSON, or a saved SSE stream). It reports foreign entities,
canaries not minted for the exchange, chat-template fragments and usage
mismatches, never printing a raw value. Exit status: 0 clean, 1 contaminated,
2 on errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if reqPath == "" || respPath == "" {
				return withCode(2, errors.New("verify: --request and --response are required"))
			}
			vd, err := verifyCapture(cmd.Context(), reqPath, respPath, policyRef)
			if err != nil {
				return withCode(2, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(vd); err != nil {
					return withCode(2, err)
				}
			} else {
				printVerdict(out, vd)
			}
			if vd.Contaminated() {
				return withCode(1, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reqPath, "request", "", "request body file (JSON)")
	cmd.Flags().StringVar(&respPath, "response", "", "response body file (JSON or SSE)")
	cmd.Flags().StringVar(&policyRef, "policy", "default", "policy file or preset name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdict as JSON")
	return cmd
}

func readCapture(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCapture+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCapture {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxCapture)
	}
	return data, nil
}

// capturedResponse is the text and metadata of a captured response.
type capturedResponse struct {
	text string
	end  inbound.End
}

// parseCapturedResponse reads a JSON response body or a saved SSE stream.
func parseCapturedResponse(kind wire.Kind, data []byte) (*capturedResponse, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		r, err := wire.ParseResponse(kind, data)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for i, s := range r.Segments {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s.Text)
		}
		cr := &capturedResponse{text: b.String(), end: inbound.End{Model: r.Model, FinishReason: r.FinishReason,
			HasUsage: r.Usage.Present, PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}}
		if r.ID != "" {
			cr.end.IDs = []string{r.ID}
		}
		return cr, nil
	}
	rd := sse.NewReader(bytes.NewReader(data))
	cr := &capturedResponse{}
	var sum wire.Summary
	var b strings.Builder
	done, events := false, 0
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		events++
		se, err := wire.ParseStreamEvent(ev.Event, ev.Data)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", events, err)
		}
		se.Fold(&sum)
		for _, s := range se.Segments {
			if s.Channel != "" {
				b.WriteString(s.Text)
			}
		}
		done = done || se.Done
	}
	if events == 0 {
		return nil, errors.New("neither a JSON body nor an SSE stream")
	}
	cr.end = inbound.End{IDs: sum.IDs, Model: sum.Model, FinishReason: sum.FinishReason, HasUsage: sum.Usage.Present,
		PromptTokens: sum.Usage.PromptTokens, CompletionTokens: sum.Usage.CompletionTokens, Truncated: !done}
	cr.text = b.String()
	return cr, nil
}

func verifyCapture(ctx context.Context, reqPath, respPath, policyRef string) (*verify.Verdict, error) {
	p, err := policies.LoadRef(policyRef)
	if err != nil {
		return nil, err
	}
	reqData, err := readCapture(reqPath)
	if err != nil {
		return nil, err
	}
	req, err := wire.ParseRequest("", reqData)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", reqPath, err)
	}
	respData, err := readCapture(respPath)
	if err != nil {
		return nil, err
	}
	resp, err := parseCapturedResponse(req.Kind, respData)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", respPath, err)
	}
	sc, err := p.NewScanner(nil)
	if err != nil {
		return nil, err
	}
	v, err := verify.New(verify.Options{Inbound: p.Inbound, Scanner: sc})
	if err != nil {
		return nil, err
	}
	ex := &inbound.Exchange{ID: "captured", Provider: req.Kind.Provider(), Model: req.Model, Streamed: req.Stream}
	for _, s := range req.Segments {
		ex.Texts = append(ex.Texts, s.Text)
	}
	return v.Check(ctx, ex, resp.text, resp.end)
}

func printVerdict(w io.Writer, vd *verify.Verdict) {
	if !vd.Contaminated() {
		fmt.Fprintln(w, "clean: no foreign material found")
		return
	}
	verb := "flagged"
	if vd.Blocked {
		verb = "contaminated"
	}
	fmt.Fprintf(w, "%s: %d signal(s)\n", verb, len(vd.Signals))
	for _, s := range vd.Signals {
		fmt.Fprintf(w, "  %-5s %s", s.Action, s.ID)
		if s.Detector != "" {
			fmt.Fprintf(w, " %s", s.Detector)
		}
		if s.Preview != "" {
			fmt.Fprintf(w, " %q", s.Preview)
		}
		if s.End > 0 {
			fmt.Fprintf(w, " at %d-%d", s.Start, s.End)
		}
		if len(s.Sources) > 0 {
			fmt.Fprintf(w, " from %s", strings.Join(s.Sources, ", "))
		}
		fmt.Fprintf(w, ": %s\n", s.Message)
	}
}
