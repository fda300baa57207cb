# solar — common tasks. Everything here also works as plain go commands.
STATICCHECK_VERSION := v0.8.2
BIN := bin/solar

.PHONY: build test race bench bench-fleet bench-remote bench-cli lint demo clean

build:
	go build -o $(BIN) ./cmd/solar

test:
	go test ./...

race:
	go test -race ./...

# Benchmarks for the SPEC section 10 targets; compare runs with benchstat.
bench: bench-fleet
	go test -run='^$$' -bench=. -skip='^BenchmarkFleet$$' -benchmem -benchtime=3x ./planner/ ./orch/... ./staging/ ./events/ ./tags/ ./resources/... ./store/...

# The fleet's targets (issue 31) on PostgreSQL: each iteration is a whole
# plan, so once (about two minutes).
bench-fleet:
	go test -run='^$$' -bench='^BenchmarkFleet$$' -benchtime=1x -timeout=15m ./orch/

# Remote execution on loopback sshd servers against the x/crypto/ssh floor
# (issue 32), alone; make bench runs them too. About two minutes.
bench-remote:
	go test -run='^$$' -bench='^BenchmarkRemote(Floor)?$$' -benchtime=3x -timeout=15m ./orch/

# run-once from the command line against plain sh loops of the same script
# (issue 32): 1,000 independent tasks at --concurrency 10 against a 10-way
# loop, and a chain of 1,000 against a sequential loop; see the script.
bench-cli:
	sh scripts/bench-cli.sh

lint:
	test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

demo:
	sh scripts/demo.sh

clean:
	rm -rf bin
