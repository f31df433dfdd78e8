module github.com/shellgate/shellgate/client/examples/go

go 1.19

require github.com/shellgate/shellgate/client/go v0.0.0

require (
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)

replace github.com/shellgate/shellgate/client/go => ../../go
