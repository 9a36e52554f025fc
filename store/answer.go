package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/paygate/paygate/charge"
)

// A key's stored answer is the bytes of the charge the API rendered, replayed byte for byte.
// It is kept compressed (zstd) against a dictionary of what charge answers hold (their field
// names and common values). The first byte says how a stored answer is encoded, so that the
// encoding can change: 1 is the dictionary alone; 2 also leaves out the charge's own values
// that its row holds (its id, PaymentIntent, inbound key and payment method, about 90 bytes
// no dictionary compresses), which are put back from the row when the answer is read; an
// answer stored as it was rendered starts with '{'. A 380-byte answer takes about 45 bytes,
// which the charge's outcome writes to its row.

// answerZstd1 marks an answer compressed against answerDictionary1; answerZstd2 one that
// also leaves out its charge's values (answerValues), with their places and a checksum of
// the whole answer.
const (
	answerZstd1 = 1
	answerZstd2 = 2
)

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

// answerValues returns the values of c's row an answer of c leaves out, in their order:
// columns a charge's later statements never change once its answer is stored.
func answerValues(c *charge.Charge) [4]string {
	return [4]string{c.ID, c.ProcessorRef, c.IdempotencyKey, c.PaymentMethod}
}

// encodeAnswer returns the stored form of answer body b of charge c; nil for none. Each of
// c's values (answerValues) is left out where it first appears as a JSON string, and its
// place is recorded (0: not left out; n: before byte n-1 of what remains), followed by the
// CRC-32 of b, so that an answer read with other values fails instead of replaying what was
// never sent.
func encodeAnswer(b []byte, c *charge.Charge) []byte {
	if b == nil {
		return nil
	}
	rest, copied := b, false
	var places [4]int
	for i, v := range answerValues(c) {
		if v == "" {
			continue
		}
		at := indexQuoted(rest, v)
		if at < 0 {
			continue
		}
		if !copied {
			rest, copied = bytes.Clone(rest), true // b is the caller's
		}
		places[i] = at + 1
		rest = slices.Delete(rest, at, at+len(v))
	}
	out := make([]byte, 1, 24+len(rest)/2)
	out[0] = answerZstd2
	for _, p := range places {
		out = binary.AppendUvarint(out, uint64(p))
	}
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(b))
	return answerEncoder.EncodeAll(rest, out)
}

// indexQuoted returns where v starts in b as the whole of a JSON string ("v"), or -1.
func indexQuoted(b []byte, v string) int {
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte(v))
		if i < 0 {
			return -1
		}
		i += from
		if i > 0 && b[i-1] == '"' && i+len(v) < len(b) && b[i+len(v)] == '"' {
			return i
		}
		from = i + 1
	}
}

// decodeAnswer returns the answer body stored as b for charge c.
func decodeAnswer(b []byte, c *charge.Charge) ([]byte, error) {
	if len(b) == 0 || (b[0] != answerZstd1 && b[0] != answerZstd2) {
		return b, nil // as it was rendered
	}
	if b[0] == answerZstd1 {
		out, err := answerDecoder.DecodeAll(b[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("store: stored answer: %w", err)
		}
		return out, nil
	}
	rest := b[1:]
	var places [4]uint64
	for i := range places {
		p, n := binary.Uvarint(rest)
		if n <= 0 {
			return nil, fmt.Errorf("store: stored answer: %w", errAnswerHeader)
		}
		places[i], rest = p, rest[n:]
	}
	if len(rest) < 4 {
		return nil, fmt.Errorf("store: stored answer: %w", errAnswerHeader)
	}
	sum := binary.BigEndian.Uint32(rest)
	out, err := answerDecoder.DecodeAll(rest[4:], nil)
	if err != nil {
		return nil, fmt.Errorf("store: stored answer: %w", err)
	}
	values := answerValues(c)
	for i := len(places) - 1; i >= 0; i-- {
		if places[i] == 0 {
			continue
		}
		at := places[i] - 1
		if at > uint64(len(out)) {
			return nil, fmt.Errorf("store: stored answer: %w", errAnswerHeader)
		}
		out = slices.Insert(out, int(at), []byte(values[i])...)
	}
	if crc32.ChecksumIEEE(out) != sum {
		return nil, fmt.Errorf("store: stored answer of charge %s: %w", c.ID, errAnswerChecksum)
	}
	return out, nil
}

var (
	errAnswerHeader   = errors.New("malformed header")
	errAnswerChecksum = errors.New("the charge's values differ from those it was stored with")
)
