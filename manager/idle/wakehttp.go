package idle

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// answerWhileWaking serves a connection that arrives while the control plane
// sleeps: TLS with the wake certificate, the first request read, the control
// plane woken, then 503 with Retry-After: 1 and Connection: close. The client's
// retry opens a new connection, which reaches the woken control plane.
func (s *Sleeper) answerWhileWaking(ctx context.Context, v vcluster, conn net.Conn) {
	logger := log.FromContext(ctx).WithValues("team", v.team)
	cert, err := s.wakeCertificate(ctx, v)
	if err != nil {
		// Without a certificate the client waits for the handshake while the
		// control plane starts; it may give up, its retry finds it awake.
		logger.Error(err, "no wake certificate; waking without answering the connection")
		_, _ = s.ensureAwake(ctx, v, byConnection)
		return
	}
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	_ = tc.SetDeadline(time.Now().Add(s.opts.WakeTimeout + 30*time.Second))
	if err := tc.HandshakeContext(ctx); err != nil {
		logger.V(1).Info("TLS handshake with a waking client failed", "err", err.Error())
		return
	}
	req, err := http.ReadRequest(bufio.NewReader(tc))
	if err != nil {
		return
	}
	hold, cancel := context.WithTimeout(ctx, s.opts.HoldMax)
	_, wakeErr := s.ensureAwake(hold, v, byConnection)
	cancel()
	if errors.Is(wakeErr, context.DeadlineExceeded) {
		wakeErr = nil // still starting: the client's retry is held again
	}
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
		Message: "the team's vCluster was asleep and is waking up; retry",
	}
	if wakeErr != nil {
		status.Message = fmt.Sprintf("the team's vCluster was asleep and did not wake: %v", wakeErr)
	}
	body, _ := json.Marshal(status)
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable, ProtoMajor: 1, ProtoMinor: 1, Request: req, Close: true,
		Header:        http.Header{"Retry-After": {"1"}, "Content-Type": {"application/json"}},
		ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)),
	}
	w := bufio.NewWriter(tc)
	_ = resp.Write(w)
	_ = w.Flush()
	_ = tc.CloseWrite()
}
