package teamctl

import (
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// explain turns what client-go reports into what a platform engineer can act on:
// the API server's own validation message (it names the field), a missing Team
// API, an unreachable or refusing cluster. Other errors pass through.
func (c *Client) explain(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonInvalid:
		return fmt.Errorf("%s", status.Status().Message)
	case apimeta.IsNoMatchError(err) || discovery.IsGroupDiscoveryFailedError(err) || strings.Contains(err.Error(), "the server could not find the requested resource"):
		return fmt.Errorf("the Team API (teams.%s/%s) is not installed on the cluster at %s: install gpuvc there with `gpuvc install` (%w)",
			gpuvcv1.GroupVersion.Group, gpuvcv1.GroupVersion.Version, c.host, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster at %s refused the kubeconfig's credentials: %w", c.host, err)
	case isUnreachable(err):
		return fmt.Errorf("cannot reach the cluster at %s (%w): is it running? `gpuvc dev cluster up` starts a local one", c.host, err)
	}
	return err
}

func isUnreachable(err error) bool {
	var netErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &netErr) || errors.As(err, &dnsErr) || strings.Contains(err.Error(), "connection refused")
}
