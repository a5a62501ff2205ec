package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// maxFilterInput bounds what redact reads from standard input.
const maxFilterInput = sdk.DefaultMaxBody

// placeholderRE matches the shape of the guard's placeholders
// ("[[PII_EMAIL_3f9a1c2b]]"); only a vault's own entries are ever restored.
var placeholderRE = regexp.MustCompile(`\[\[[A-Z][A-Z0-9_]*_[0-9a-f]{8}\]\]`)

// vaultFile is what redact saves and restore reads. It holds the raw values:
// it is written owner-only (0600) and never printed.
type vaultFile struct {
	Version      int               `json:"version"`
	Policy       string            `json:"policy"`
	Destination  string            `json:"destination"`
	Created      time.Time         `json:"created"`
	Placeholders map[string]string `json:"placeholders"`
}

func newRedactCmd() *cobra.Command {
	var policyRef, dest, vaultPath string
	cmd := &cobra.Command{
		Use:   "redact --vault FILE",
		Short: "Redact standard input for a destination, saving the placeholders to a vault file",
		Long: `Redact reads text on standard input and writes it to standard output with every value the
policy does not allow for the destination replaced by a placeholder ("[[PII_EMAIL_3f9a1c2b]]"),
through the same guard as the SDK and the proxy. The placeholder map is saved to the vault file,
readable by its owner only (0600); "aishield restore --vault FILE" puts the values back:

  cat notes.txt | aishield redact --vault v.json | some-llm-cli | aishield restore --vault v.json

If the policy blocks the text for the destination (a secret, a document marked restricted),
nothing is written to standard output, the reasons go to standard error (masked) and the exit
status is 1. Input must be UTF-8 text.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pol, err := policies.LoadRef(policyRef)
			if err != nil {
				return withCode(2, err)
			}
			if dest != "" {
				if _, ok := pol.Destination(dest); !ok {
					return withCode(2, fmt.Errorf("policy %q has no destination %q", pol.Name, dest))
				}
			}
			in, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxFilterInput+1))
			if err != nil {
				return withCode(2, fmt.Errorf("reading standard input: %w", err))
			}
			if len(in) > maxFilterInput {
				return withCode(2, fmt.Errorf("standard input is over %d bytes", maxFilterInput))
			}
			if !utf8.Valid(in) {
				return withCode(2, errors.New("standard input is not valid UTF-8 text (convert it first, e.g. with iconv, or extract the text of documents)"))
			}
			g, err := sdk.New(cmd.Context(), sdk.Options{Policy: pol, Destination: dest})
			if err != nil {
				return withCode(2, err)
			}
			body, err := json.Marshal(map[string]any{"model": "aishield-redact",
				"messages": []map[string]string{{"role": "user", "content": string(in)}}})
			if err != nil {
				return withCode(2, err)
			}
			x, err := g.Check(cmd.Context(), sdk.Request{URL: "/v1/chat/completions", Provider: "openai", Body: body, ContentType: "application/json"})
			if err != nil {
				var be *sdk.BlockedError
				if errors.As(err, &be) {
					return withCode(1, err)
				}
				return withCode(2, err)
			}
			var sent struct {
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(x.Body, &sent); err != nil || len(sent.Messages) != 1 {
				return withCode(2, fmt.Errorf("unexpected redacted body from the guard"))
			}
			out := sent.Messages[0].Content
			v := vaultFile{Version: 1, Policy: pol.Name, Destination: x.Destination, Created: time.Now().UTC(), Placeholders: map[string]string{}}
			for _, p := range placeholderRE.FindAllString(out, -1) {
				if val, _ := x.Restore(p); val != p {
					v.Placeholders[p] = val
				}
			}
			if err := writeVault(vaultPath, &v); err != nil {
				return withCode(2, err)
			}
			if _, err := io.WriteString(cmd.OutOrStdout(), out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "aishield redact: %s for %s: %d values redacted, vault %s\n",
				x.Decision.Action, x.Destination, len(v.Placeholders), vaultPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&policyRef, "policy", "default", "policy file or preset name")
	cmd.Flags().StringVar(&dest, "destination", "", "policy destination the text is meant for (default: the policy's default)")
	cmd.Flags().StringVar(&vaultPath, "vault", "", "file to save the placeholder map to (written 0600)")
	_ = cmd.MarkFlagRequired("vault")
	return cmd
}

// writeVault writes v to path readable and writable by its owner only,
// replacing any previous vault at once: it is written to a temporary file
// (0600) beside it and renamed, so that a restore at the end of the same
// pipe never reads a half-written or previous vault once redact's output
// has reached it.
func writeVault(path string, v *vaultFile) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(append(data, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// readVault loads the vault at path.
func readVault(path string) (*vaultFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v vaultFile
	if err := json.Unmarshal(data, &v); err != nil || v.Version != 1 {
		return nil, fmt.Errorf("%s is not an aishield vault", path)
	}
	return &v, nil
}

func newRestoreCmd() *cobra.Command {
	var vaultPath string
	cmd := &cobra.Command{
		Use:   "restore --vault FILE",
		Short: "Put back the values of a vault's placeholders in standard input",
		Long: `Restore copies standard input to standard output, replacing the placeholders saved in the
vault file by "aishield redact" with their values. Only that vault's placeholders are restored:
placeholder-shaped text from anywhere else is left as it is (and counted on standard error).
Input is processed as it arrives, so restore can sit at the end of a streaming pipe. The vault
is read when the first byte of input arrives, not before: in
"aishield redact --vault v | some-llm-cli | aishield restore --vault v" every command starts at
once, and redact writes the vault before its output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := bufio.NewReaderSize(cmd.InOrStdin(), 32<<10)
			_, perr := in.Peek(1)
			v, err := readVault(vaultPath)
			if err != nil {
				if errors.Is(perr, io.EOF) && errors.Is(err, fs.ErrNotExist) {
					err = fmt.Errorf("no vault %s and nothing on standard input (did redact refuse the text?)", vaultPath)
				}
				return withCode(2, err)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			restored, foreign, err := restoreStream(in, w, v.Placeholders)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return withCode(2, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "aishield restore: %d placeholders restored", restored)
			if foreign > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), ", %d not from this vault left in place", foreign)
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultPath, "vault", "", "vault file written by aishield redact")
	_ = cmd.MarkFlagRequired("vault")
	return cmd
}

// restoreStream copies r to w replacing the placeholders of m by their
// values, holding back only what could be the start of a placeholder.
func restoreStream(r io.Reader, w io.Writer, m map[string]string) (restored, foreign int, err error) {
	maxLen := 0
	for p := range m {
		maxLen = max(maxLen, len(p))
	}
	maxLen = max(maxLen, 64)
	replace := func(s string) string {
		return placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
			if v, ok := m[p]; ok {
				restored++
				return v
			}
			foreign++
			return p
		})
	}
	var pending string
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		pending += string(buf[:n])
		cut := len(pending)
		if rerr == nil {
			if i := strings.LastIndex(pending, "[["); i >= 0 && len(pending)-i < maxLen && !strings.Contains(pending[i:], "]]") {
				cut = i
			} else if strings.HasSuffix(pending, "[") {
				cut = len(pending) - 1
			}
		}
		if _, werr := io.WriteString(w, replace(pending[:cut])); werr != nil {
			return restored, foreign, werr
		}
		pending = pending[cut:]
		if rerr == io.EOF {
			return restored, foreign, nil
		}
		if rerr != nil {
			return restored, foreign, rerr
		}
	}
}
