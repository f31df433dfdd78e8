package main

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"
)

// protoCodec marshals with the protobuf v2 API (google.golang.org/protobuf), which the
// generated stubs use. grpc-go ≥ 1.35 built with golang/protobuf ≥ 1.4 already does this;
// registering it keeps the example working where an older pair is installed (Debian 12's
// grpc-go 1.33 with golang/protobuf 1.3.5, what CI builds with) and changes nothing
// elsewhere.
type protoCodec struct{}

func (protoCodec) Marshal(v interface{}) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("protoCodec: %T is not a proto.Message", v)
	}
	return proto.Marshal(m)
}

func (protoCodec) Unmarshal(data []byte, v interface{}) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("protoCodec: %T is not a proto.Message", v)
	}
	return proto.Unmarshal(data, m)
}

func (protoCodec) Name() string { return "proto" }

func init() { encoding.RegisterCodec(protoCodec{}) }
