package store

import (
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// A key's stored answer is the bytes of the charge the API rendered, replayed byte for byte.
// It is kept compressed (zstd) against a dictionary of what charge answers hold (their field
// names and common values): a 380-byte answer takes about 110, which is most of what a
// charge's outcome writes. The first byte says how a stored answer is encoded, so that the
// encoding can change: 1 is this one; an answer stored as it was rendered starts with '{'.

// answerZstd1 marks an answer compressed against answerDictionary1.
const answerZstd1 = 1

// answerDictionary1 holds what charge answers repeat, the commonest last (nearer bytes are
// cheaper to refer to). It never changes: an answer stored with it is read with it.
var answerDictionary1 = []byte(`"error":{"type":"invalid_request_error","code":"","message":"","param":""},` +
	`"failure":{"code":"processor_unavailable","retryable":true},"error":{"type":"api_error","code":"",` +
	`"decline":{"code":"insufficient_funds","network":"visa","category":2,"class":"funds","hold":"",` +
	`"reattempt":{"allowed":false,"not_before":"2026-12-02T00:00:00Z","reason":"too_early","remaining_in_window":14},` +
	`"evidence":{"decline_code":"","code":"card_declined"}},"error":{"type":"card_error","code":"card_declined",` +
	`"message":"","param":""},"next_reattempt_at":"","customer":"cus_","initiator":"merchant","reattempt":"auto",` +
	`{"id":"ch_","object":"charge","amount":1000,"currency":"usd","status":"declined","reference":"order-",` +
	`{"id":"ch_","object":"charge","amount":1000,"currency":"usd","status":"succeeded","reference":null,` +
	`"created":1796185251,"processor_ref":"pi_","attempts":1,"idempotency_key":"","payment_method":"pm_card_visa",` +
	`"customer":null,"initiator":"customer","reattempt":"manual","reattempt_of":null,"metadata":{}}`)

// The compressor and the decompressor of stored answers: each may be used by many
// goroutines at once.
var (
	answerEncoder = mustAnswerEncoder()
	answerDecoder = mustAnswerDecoder()
)

func mustAnswerEncoder() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(answerZstd1, answerDictionary1),
		zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		panic(err) // the options are constant
	}
	return e
}

func mustAnswerDecoder() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(answerZstd1, answerDictionary1),
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithDecoderMaxMemory(1<<20))
	if err != nil {
		panic(err) // the options are constant
	}
	return d
}

// encodeAnswer returns the stored form of answer body b; nil for none.
func encodeAnswer(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, 1, 16+len(b)/2)
	out[0] = answerZstd1
	return answerEncoder.EncodeAll(b, out)
}

// decodeAnswer returns the answer body stored as b.
func decodeAnswer(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != answerZstd1 {
		return b, nil // as it was rendered
	}
	out, err := answerDecoder.DecodeAll(b[1:], nil)
	if err != nil {
		return nil, fmt.Errorf("store: stored answer: %w", err)
	}
	return out, nil
}
