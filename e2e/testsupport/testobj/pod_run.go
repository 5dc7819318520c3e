package testobj

// Runs sets the first container's image and command, for pods that really run on
// a node (the other builders keep an image no node can pull, which only kwok
// nodes, which run nothing, accept).
func (p *PodWrapper) Runs(image string, command ...string) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Image = image
	c.Command = command
	return p
}
