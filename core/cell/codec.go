package cell

import "encoding/json"

// Codec encodes the argument and reply of a typed method call
// (RegisterMethod). JSONCodec is the default; WithCodec picks another.
type Codec interface {
	// ContentType names the encoding on the wire (the Content-Type of a
	// call sent to another node): the owner refuses a call whose codec is
	// not the method's.
	ContentType() string
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONCodec encodes with encoding/json: readable on the wire, and every Go
// value with exported fields round-trips without registration.
type JSONCodec struct{}

func (JSONCodec) ContentType() string { return "application/json" }

func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
