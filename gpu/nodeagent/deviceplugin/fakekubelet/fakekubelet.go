// Package fakekubelet is the kubelet side of the device-plugin API, for tests:
// a Registration service on <dir>/kubelet.sock that records registrations,
// and a client that dials a plugin's socket as the kubelet does.
package fakekubelet

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Kubelet serves the Registration service on <Dir>/kubelet.sock.
type Kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	Dir  string
	srv  *grpc.Server
	regs chan *pluginapi.RegisterRequest
}

// Start listens on <dir>/kubelet.sock. Stop it with Stop, which removes the
// socket as a stopping kubelet does.
func Start(dir string) (*Kubelet, error) {
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		return nil, err
	}
	k := &Kubelet{Dir: dir, srv: grpc.NewServer(), regs: make(chan *pluginapi.RegisterRequest, 256)}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	return k, nil
}

// Stop ends the server and removes kubelet.sock.
func (k *Kubelet) Stop() { k.srv.Stop() }

// Register records the request.
func (k *Kubelet) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	select {
	case k.regs <- req:
		return &pluginapi.Empty{}, nil
	default:
		return nil, fmt.Errorf("fake kubelet: too many registrations")
	}
}

// WaitRegistrations returns, by resource name, the registrations received
// until every resource in names has registered; a registration of any other
// resource or the end of ctx is an error.
func (k *Kubelet) WaitRegistrations(ctx context.Context, names ...string) (map[string]*pluginapi.RegisterRequest, error) {
	got := map[string]*pluginapi.RegisterRequest{}
	for len(got) < len(names) {
		select {
		case r := <-k.regs:
			if !slices.Contains(names, r.ResourceName) {
				return got, fmt.Errorf("unexpected registration of %q (want %v)", r.ResourceName, names)
			}
			got[r.ResourceName] = r
		case <-ctx.Done():
			seen := make([]string, 0, len(got))
			for n := range got {
				seen = append(seen, n)
			}
			sort.Strings(seen)
			return got, fmt.Errorf("only %v of %v registered: %w", seen, names, ctx.Err())
		}
	}
	return got, nil
}

// Pending returns a registration received and not yet consumed, if any.
func (k *Kubelet) Pending() (*pluginapi.RegisterRequest, bool) {
	select {
	case r := <-k.regs:
		return r, true
	default:
		return nil, false
	}
}

// Dial connects to a plugin's endpoint (a socket name in the kubelet's folder)
// as the kubelet does. Close the connection when done.
func (k *Kubelet) Dial(endpoint string) (pluginapi.DevicePluginClient, *grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+filepath.Join(k.Dir, endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Reconnect quickly: tests dial sockets that appear a moment later.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		return nil, nil, err
	}
	return pluginapi.NewDevicePluginClient(conn), conn, nil
}
