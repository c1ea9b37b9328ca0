package client

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "github.com/sluice-dev/sluice/client/inferencepb"
)

type readyServer struct {
	pb.UnimplementedGRPCInferenceServiceServer
}

func (readyServer) ServerReady(context.Context, *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: true}, nil
}

// A server that comes up while the client is retrying is reached.
func TestRetryReachesLateServer(t *testing.T) {
	opts := Options{Retry: RetryPolicy{MaxAttempts: 30, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}}
	for _, proto := range []string{"grpc", "http"} {
		t.Run(proto, func(t *testing.T) {
			addr := closedAddr(t)
			var c Client
			if proto == "grpc" {
				gc, err := NewGRPC(addr, opts)
				if err != nil {
					t.Fatal(err)
				}
				c = gc
			} else {
				c, _ = NewHTTP(addr, opts, nil)
			}
			defer c.Close()
			// A first call fails: nothing listens yet (and gRPC's channel
			// enters its reconnect backoff).
			ctx0, cancel0 := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err := c.ServerReady(ctx0)
			cancel0()
			if err == nil {
				t.Fatal("ServerReady succeeded before the server started")
			}
			stop := make(chan struct{})
			go func() {
				time.Sleep(150 * time.Millisecond)
				l, err := net.Listen("tcp", addr)
				if err != nil {
					t.Error(err)
					close(stop)
					return
				}
				if proto == "grpc" {
					s := grpc.NewServer()
					pb.RegisterGRPCInferenceServiceServer(s, readyServer{})
					go s.Serve(l)
					<-stop
					s.Stop()
				} else {
					s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
					go s.Serve(l)
					<-stop
					s.Close()
				}
			}()
			defer close(stop)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			t0 := time.Now()
			ready, err := c.ServerReady(ctx)
			if err != nil || !ready {
				t.Fatalf("ServerReady = %v, %v after %v", ready, err, time.Since(t0))
			}
			t.Logf("reached after %v", time.Since(t0))
		})
	}
}
