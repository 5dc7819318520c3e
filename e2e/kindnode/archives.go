package kindnode

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// PinArchives links image archives into dir, a folder of the caller's run, and
// returns their paths there, so the run has them whatever happens to the images
// cache meanwhile (images.Build removes an image's older archives nobody holds or
// used within images.KeepUnused; before that rule another test's gpuvc build
// removed this run's archive between its build and kind's loading). Where dir is
// on another file system the archive is copied.
func PinArchives(dir string, tars []string) ([]string, error) {
	var pinned []string
	for _, t := range tars {
		p := filepath.Join(dir, filepath.Base(t))
		if err := os.Link(t, p); err != nil {
			if err := copyFile(t, p); err != nil {
				return nil, fmt.Errorf("keeping image archive %s for this run: %w", t, err)
			}
		}
		pinned = append(pinned, p)
	}
	return pinned, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
