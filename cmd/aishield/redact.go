package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// maxFilterInput bounds what redact reads from standard input.
const maxFilterInput = sdk.DefaultMaxBody

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
			g, err := sdk.New(cmd.Context(), sdk.Options{Policy: pol, Destination: dest, NoVerify: true})
			if err != nil {
				return withCode(2, err)
			}
			defer g.Close()
			x, err := g.CheckText(cmd.Context(), string(in))
			if err != nil {
				var be *sdk.BlockedError
				if errors.As(err, &be) {
					return withCode(1, err)
				}
				return withCode(2, err)
			}
			if err := writeVault(vaultPath, x.Vault()); err != nil {
				return withCode(2, err)
			}
			if _, err := cmd.OutOrStdout().Write(x.Body); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "aishield redact: %s for %s: %d values redacted, vault %s\n",
				x.Decision.Action, x.Destination, x.Vault().Len(), vaultPath)
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
func writeVault(path string, v *sdk.Vault) error {
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(buf.Bytes())
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
func readVault(path string) (*sdk.Vault, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := sdk.ReadVault(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
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
			st, err := v.Restore(in, w)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return withCode(2, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "aishield restore: %d placeholders restored", st.Restored)
			if st.Foreign > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), ", %d not from this vault left in place", st.Foreign)
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultPath, "vault", "", "vault file written by aishield redact")
	_ = cmd.MarkFlagRequired("vault")
	return cmd
}
