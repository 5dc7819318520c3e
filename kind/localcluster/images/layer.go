package images

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// layerTime is the modification time of every entry: fixed, so that the layer only
// depends on the declared content.
var layerTime = time.Unix(0, 0).UTC()

// writeLayer writes the entries as an uncompressed tar stream in the given order.
func writeLayer(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.Path, "/"),
			Mode:    e.Mode,
			Uid:     e.UID,
			Gid:     e.GID,
			ModTime: layerTime,
		}
		switch e.Kind {
		case kindDir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case kindSymlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Target
		case kindFile:
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.Size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing %s: %w", e.Path, err)
		}
		if e.Kind == kindFile {
			if err := copyContent(tw, e); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyContent copies exactly the size that was hashed, so a file that changes
// while the layer is written fails the build instead of producing a layer that
// does not match its cache key.
func copyContent(w io.Writer, e entry) error {
	if e.source == "" {
		_, err := w.Write(e.content)
		return err
	}
	f, err := os.Open(e.source)
	if err != nil {
		return fmt.Errorf("input file for %s: %w", e.Path, err)
	}
	defer f.Close()
	if _, err := io.CopyN(w, f, e.Size); err != nil {
		return fmt.Errorf("copying %s into %s: %w", e.source, e.Path, err)
	}
	if n, _ := io.CopyN(io.Discard, f, 1); n != 0 {
		return fmt.Errorf("%s grew while the image was built", e.source)
	}
	return nil
}
