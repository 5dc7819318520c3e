package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// pinArchives links the image archives into a folder of this run's own and
// returns their paths there. The images cache keeps one archive per image name
// (images.Build removes older ones), so another test building a different gpuvc
// binary on the same machine would delete this run's archive between its build
// and kind's loading (seen: "loading …/ghcr.io_gpuvc_gpuvc_dev-….tar into
// gpuvc-e2e-worker2: no such file or directory"); a hard link keeps it. A copy
// is made where the folder is on another file system.
func pinArchives(tars []string) (dir string, pinned []string, err error) {
	dir, err = os.MkdirTemp("", "gpuvc-e2e-kind-images-")
	if err != nil {
		return "", nil, err
	}
	for _, t := range tars {
		p := filepath.Join(dir, filepath.Base(t))
		if err := os.Link(t, p); err != nil {
			if err := copyFile(t, p); err != nil {
				os.RemoveAll(dir)
				return "", nil, fmt.Errorf("keeping image archive %s for this run: %w", t, err)
			}
		}
		pinned = append(pinned, p)
	}
	return dir, pinned, nil
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
