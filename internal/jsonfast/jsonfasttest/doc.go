// Package jsonfasttest makes random values for the tests that check
// jsonfast, and the codecs built on it, against encoding/json.
package jsonfasttest
