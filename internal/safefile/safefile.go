// Package safefile reads files from folders that other people may write to:
// the files helpdesk's outbox and ticket folders, the webhook directory. It
// opens what is at the path itself, never what a symbolic link there points
// to, does not block on a named pipe, and hands back the description of the
// file it opened, so that the caller checks the file it reads and not a path
// that may have been swapped in between.
//
// [Dir] does the same for folders: it opens a folder without following a
// link anyone but root or this process's user could have planted on its
// way, and then reads, writes, moves and walks what it holds by
// descriptor, following no link at all. It is what a command run by root
// uses in the folders the staff's group may write.
//
// Its errors name the path and what is wrong, never the file's content:
// [JSONError] turns a JSON decoding error into one that says where, not
// what. Apart from [Dir.WriteFile], it does not write files; see package
// atomicfile for that.
package safefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// ErrNotRegular: the path holds a symbolic link, a directory, a pipe or a
// device rather than a plain file.
var ErrNotRegular = errors.New("not a regular file (a link, a directory, a pipe or a device)")

// ErrLink: a symbolic link where a folder was expected, in a folder others
// may write, so that following it could lead anywhere they chose.
var ErrLink = errors.New("a symbolic link where a folder is expected")

// ErrTooBig: the file is larger than the caller's limit.
var ErrTooBig = errors.New("file too big")

// Flags, added to the flags of os.OpenFile, open what is at the path itself
// (a symbolic link there fails the open) and keep a named pipe from holding
// the open. They are empty where the system lacks them.
const Flags = openFlags

// Open opens path for reading without following a symbolic link at its last
// element and without waiting on a pipe, and returns the open file with its
// description (taken from the open file, not the path). Anything but a
// regular file is refused with an error wrapping [ErrNotRegular]. Where the
// system lacks O_NOFOLLOW the description still tells a swapped file: compare
// it with what was listed using os.SameFile.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if isLink(err) {
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		}
		return nil, nil, err
	}
	return regular(f)
}

// regular returns the open f with its description when it is a regular
// file, and closes it and refuses it with [ErrNotRegular] when not.
func regular(f *os.File) (*os.File, fs.FileInfo, error) {
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: f.Name(), Err: ErrNotRegular}
	}
	return f, info, nil
}

// Read reads f to its end; beyond limit bytes it fails with [ErrTooBig].
func Read(f *os.File, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: ErrTooBig}
	}
	return b, nil
}

// ReadFile opens path as [Open] does and reads it whole, at most limit
// bytes.
func ReadFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	return readOpened(limit)(Open(path))
}

// readOpened returns what reads an opened file whole, at most limit
// bytes, and closes it: for ReadFile and Dir.ReadFile.
func readOpened(limit int64) func(*os.File, fs.FileInfo, error) ([]byte, fs.FileInfo, error) {
	return func(f *os.File, info fs.FileInfo, err error) ([]byte, fs.FileInfo, error) {
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		b, err := Read(f, limit)
		if err != nil {
			return nil, nil, err
		}
		return b, info, nil
	}
}

// JSONError rewrites an error of encoding/json decoding data into one that
// says where the data is wrong (line and column) and what kind of wrong,
// without quoting any of it: encoding/json's own messages quote a character,
// a number or a field name from the data, which may be a secret when the
// file is not what it should be. A nil err stays nil.
func JSONError(data []byte, err error) error {
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s: not valid JSON", position(data, syn.Offset))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("%s: the value has the wrong type", position(data, typ.Offset))
		}
		return fmt.Errorf("%s: field %s should be of type %s", position(data, typ.Offset), typ.Field, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON ends early or is empty")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errors.New("a field that is not one of the known ones")
	}
	return errors.New("not valid JSON")
}

// position returns "line L, column C" of byte offset off in data.
func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
