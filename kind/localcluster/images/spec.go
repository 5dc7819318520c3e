package images

// Spec declares one image: what goes into its single layer and how its process runs.
type Spec struct {
	// Ref is the reference the image is imported under, e.g.
	// "ghcr.io/loft-sh/vcluster-oss:0.36.1". It must carry a tag.
	Ref string

	Files    []File
	Dirs     []Dir
	Symlinks []Symlink

	// LibrariesOf lists host binaries whose shared libraries (and ELF interpreter)
	// the image must provide: the image's own dynamically linked binaries, and
	// binaries that reach the container another way (vCluster runs the Kubernetes
	// binaries its init container copies into a volume). Static binaries add nothing.
	LibrariesOf []string

	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
}

// File is a regular file in the image, read from Source on the host or, when
// Source is empty, taken from Content.
type File struct {
	Source  string
	Content []byte
	Path    string // absolute path in the image
	Mode    int64  // Unix permission bits; 0 means 0o644
	UID     int
	GID     int
}

// Dir is a directory in the image. Parents of every entry are created implicitly
// (0o755, root); declare a Dir for other modes or owners, or for an empty directory.
type Dir struct {
	Path string
	Mode int64 // Unix permission bits including sticky/setgid, e.g. 0o1777; 0 means 0o755
	UID  int
	GID  int
}

// Symlink is a symbolic link in the image; Target is stored as written.
type Symlink struct {
	Path   string
	Target string
}

// Executable is the usual mode of binaries in the images.
const Executable int64 = 0o755
