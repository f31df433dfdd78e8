// Command shellgate-go-example runs one exec_command through a shellgate router's
// ToolRouterService.Execute stream and prints what the process wrote and the tool output
// the model would read.
//
//	./build.sh && ./shellgate-go-example -target 127.0.0.1:50051 -cmd 'echo hello'
//
// README.md says why ./build.sh (offline, Debian's Go packages) rather than `go run .`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	shellgatev1 "github.com/shellgate/shellgate/client/go/shellgate/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func main() {
	target := flag.String("target", "127.0.0.1:50051", "router address (host:port, plaintext)")
	cmd := flag.String("cmd", "echo hello from go", "command for the exec_command call")
	thread := flag.String("thread", "go-example", "thread id")
	token := flag.String("token", "",
		"bearer token (default: $SHELLGATE_TOKEN, else the token a local shellgate serve "+
			"generated for a loopback target's port)")
	flag.Parse()
	if err := run(*target, *cmd, *thread, resolveToken(*token, *target)); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(target, cmd, thread, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	// Plaintext for a loopback router; use grpc.WithTransportCredentials for TLS.
	conn, err := grpc.DialContext(ctx, target, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("dial %s: %w", target, err)
	}
	defer conn.Close()
	client := shellgatev1.NewToolRouterServiceClient(conn)

	// The model's output item, as the Responses API sends it: arguments are a JSON string.
	args, _ := json.Marshal(map[string]any{"cmd": cmd, "yield_time_ms": 5000})
	item, _ := json.Marshal(map[string]string{
		"type": "function_call", "name": "exec_command",
		"arguments": string(args), "call_id": "go-call-1",
	})
	stream, err := client.Execute(ctx, &shellgatev1.ExecuteRequest{
		ThreadId: thread,
		Input: &shellgatev1.ExecuteRequest_Item{Item: &shellgatev1.ToolCallItem{
			Item: &shellgatev1.ToolCallItem_RawJson{RawJson: string(item)},
		}},
	})
	if err != nil {
		return err
	}
	for {
		event, err := stream.Recv()
		if err == io.EOF {
			return fmt.Errorf("stream ended without a completed event")
		}
		if err != nil {
			return err
		}
		switch e := event.Event.(type) {
		case *shellgatev1.ExecuteResponse_Output:
			fmt.Printf("output: %q\n", e.Output.Data)
		case *shellgatev1.ExecuteResponse_ApprovalRequired:
			// A real harness asks its user, then sends Execute{resume: {approval_id, decision}}.
			fmt.Printf("approval required: %s\n", e.ApprovalRequired.ApprovalId)
			return nil
		case *shellgatev1.ExecuteResponse_Completed:
			done := e.Completed
			fmt.Printf("exit code: %d\n", done.GetExitCode())
			fmt.Printf("termination: %s\n", done.Termination)
			fmt.Printf("output item: %s\n", done.OutputItemJson)
			return nil
		}
	}
}
