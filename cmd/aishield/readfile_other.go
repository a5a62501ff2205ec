//go:build !unix

package main

import "os"

// readScanFile reads the regular file at path whole into rd's buffer, as
// openScanFile opens it; a file over maxWholeFile is returned open as f,
// to be streamed.
func (rd *fileReader) readScanFile(path string) (data []byte, f *os.File, err error) {
	return rd.readOpened(path)
}
