package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// maxCapture bounds the captured files verify reads.
const maxCapture = 64 << 20

func newVerifyCmd() *cobra.Command {
	var reqPath, respPath, policyRef string
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "verify --request FILE --response FILE",
		Short: "Check a captured exchange's response for foreign material",
		Long: `verify checks a captured exchange: the request body (OpenAI or Anthropic JSON)
and its response (JSON, or a saved SSE stream). It reports foreign entities,
canaries not minted for the exchange, chat-template fragments and usage
mismatches, never printing a raw value. Exit status: 0 clean, 1 (or
--exit-code) contaminated, 2 on errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return of.run(cmd, func(out io.Writer) error {
				if reqPath == "" || respPath == "" {
					return withCode(2, errors.New("verify: --request and --response are required"))
				}
				p, err := loadPolicy(cmd)
				if err != nil {
					return err
				}
				vd, err := verifyCapture(cmd.Context(), reqPath, respPath, p)
				if err != nil {
					return withCode(2, err)
				}
				if of.format == "json" {
					if err := writeJSON(out, vd); err != nil {
						return withCode(2, err)
					}
				} else if err := printVerdict(out, vd); err != nil {
					return withCode(2, err)
				}
				if vd.contaminated() {
					return of.fail(nil)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reqPath, "request", "", "request body file (JSON)")
	cmd.Flags().StringVar(&respPath, "response", "", "response body file (JSON or SSE)")
	addPolicyFlag(cmd.Flags(), &policyRef, "giving the inbound checks")
	of = addOutputFlags(cmd, "text", "text", "json")
	of.addExitCode(cmd, "the response carries foreign material")
	of.addJSONAlias(cmd)
	bindEnv(cmd)
	return cmd
}

// readCapture reads a captured file (readInput's rules: a regular file or
// a pipe, at most maxCapture bytes).
func readCapture(ctx context.Context, path string) ([]byte, error) {
	data, err := inputfile.ReadAll(ctx, path, maxCapture)
	if err != nil {
		return nil, &inputError{Path: path, Err: err}
	}
	return data, nil
}

// verdict is what verify prints: the guard's verdict on the replayed
// exchange and its signals (masked).
type verdict struct {
	Exchange string       `json:"exchange"`
	Verdict  sdk.Verdict  `json:"verdict"`
	Blocked  bool         `json:"blocked"`
	Checks   []string     `json:"checks"`
	Signals  []sdk.Signal `json:"signals"`
}

// contaminated reports whether the verdict holds any signal (block or
// flag).
func (v *verdict) contaminated() bool { return len(v.Signals) > 0 }

// verifyCapture replays a captured exchange through the guard.
func verifyCapture(ctx context.Context, reqPath, respPath string, p *policies.Policy) (*verdict, error) {
	reqData, err := readCapture(ctx, reqPath)
	if err != nil {
		return nil, err
	}
	respData, err := readCapture(ctx, respPath)
	if err != nil {
		return nil, err
	}
	g, err := sdk.New(ctx, sdk.Options{Policy: p})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	x, err := g.Replay(ctx, sdk.Capture{Request: reqData, Response: respData})
	if err != nil {
		var ge *sdk.GuardError
		if errors.As(err, &ge) && ge.Stage == sdk.StageParse {
			return nil, fmt.Errorf("%s: %w", reqPath, err)
		}
		return nil, fmt.Errorf("%s: %w", respPath, err)
	}
	vd := &verdict{Exchange: x.ID, Verdict: x.Verdict(), Checks: g.Checks(), Signals: x.Signals()}
	if vd.Signals == nil {
		vd.Signals = []sdk.Signal{}
	}
	vd.Blocked = vd.Verdict == sdk.VerdictContaminated
	return vd, nil
}

func printVerdict(out io.Writer, vd *verdict) error {
	w := bufio.NewWriter(out)
	if !vd.contaminated() {
		fmt.Fprintln(w, "clean: no foreign material found")
		return w.Flush()
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
	return w.Flush()
}
