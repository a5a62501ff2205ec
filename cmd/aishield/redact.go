package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/sdk"
)

// maxFilterInput bounds what redact reads from standard input.
const maxFilterInput = sdk.DefaultMaxBody

// maxVault bounds the vault file restore reads: redact writes at most one
// entry per value of an input of maxFilterInput bytes.
const maxVault = 4 * maxFilterInput

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
			// Checked before anything is read, so a refused vault path
			// leaves everything as it was.
			if err := checkOutputPath(vaultPath); err != nil {
				return withCode(2, fmt.Errorf("--vault: %w", err))
			}
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			if dest != "" {
				if _, ok := pol.Destination(dest); !ok {
					return withCode(2, fmt.Errorf("policy %q has no destination %q", pol.Name, dest))
				}
			}
			stdin, stop := contextReader(cmd.Context(), cmd.InOrStdin())
			defer stop()
			in, err := io.ReadAll(io.LimitReader(stdin, maxFilterInput+1))
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
				return withCode(2, fmt.Errorf("--vault: %w", err))
			}
			if _, err := cmd.OutOrStdout().Write(x.Body); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "aishield redact: %s for %s: %d values redacted, vault %s\n",
				x.Decision.Action, x.Destination, x.Vault().Len(), vaultPath)
			return nil
		},
	}
	addPolicyFlag(cmd.Flags(), &policyRef, "giving what to redact for the destination")
	cmd.Flags().StringVar(&dest, "destination", "", "policy destination the text is meant for (default: the policy's default)")
	cmd.Flags().StringVar(&vaultPath, "vault", "", "file to save the placeholder map to (written 0600)")
	_ = cmd.MarkFlagRequired("vault")
	return cmd
}

// writeVault writes v to path readable and writable by its owner only,
// replacing any previous vault at once (writeOutputFile), so that a
// restore at the end of the same pipe never reads a half-written or
// previous vault once redact's output has reached it. A path that is not a
// regular file (a symlink, a device, a FIFO, a directory) is refused.
func writeVault(path string, v *sdk.Vault) error {
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		return err
	}
	return writeOutputFile(path, buf.Bytes(), 0o600)
}

// readVault loads the vault at path.
func readVault(ctx context.Context, path string) (*sdk.Vault, error) {
	data, err := inputfile.ReadAll(ctx, path, maxVault)
	if err != nil {
		return nil, &inputError{Path: path, Err: err}
	}
	v, err := sdk.ReadVault(bytes.NewReader(data))
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
			stdin, stop := contextReader(cmd.Context(), cmd.InOrStdin())
			defer stop()
			in := bufio.NewReaderSize(stdin, 32<<10)
			_, perr := in.Peek(1)
			v, err := readVault(cmd.Context(), vaultPath)
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
