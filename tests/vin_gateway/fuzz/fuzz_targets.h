// The bodies of the gateway's libFuzzer targets, shared by the fuzzers (clang, -fsanitize=fuzzer)
// and by a deterministic smoke test that runs them in every build (fuzz_smoke_test.cc, on the
// seeds under tests/vin_gateway/fuzz/seeds/). Each returns 0 and traps when an invariant breaks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fusebox::gateway::fuzz {

// NormalizeVin / ValidateVin on arbitrary bytes: never crashes; an accepted VIN is 17 VIN
// characters; problem positions are within the input; the answer renders as valid UTF-8 JSON.
int VinNormalizer(const std::uint8_t* data, std::size_t size);

// ParseVpic on arbitrary bytes: never crashes; every row has the required vehicle keys and only
// snake_case keys; values are trimmed.
int VpicParser(const std::uint8_t* data, std::size_t size);

// The bytes a client sends on one connection: read request after request (keep-alive,
// pipelining: what follows a request is the next one) by Beast's request parser with the server's
// limits (HttpServerOptions: 8 KiB of header, 64 KiB of body), each answered by the Router in
// process against a fake upstream (answers like vPIC) on an io_context run to completion. Holds:
// the router never throws and always answers, with a status in [200, 599]; a JSON answer is one
// valid UTF-8 JSON object with a string "status"; no header name or value carries CR, LF or NUL;
// the answer serializes as HTTP/1.1 and parses back to the same status and body; 204/304 have no
// body; the log fields are bounded valid UTF-8. A read error ends the connection, as in the
// server (which then answers 400, 413 or 431 and closes).
int HttpRequestPath(const std::uint8_t* data, std::size_t size);

// The bytes an upstream sends on one connection after a request, read by the HTTP vPIC client's
// reader (service/upstream_answer.h) from an in-memory stream, whole and dribbled 7 bytes at a
// time: the same interim answers, final status, body and error either way; the final answer is
// never 1xx; at most kMaxInterimAnswers interim answers; the body within the cap; reusable only
// after a whole keep-alive answer with nothing read past it.
int UpstreamAnswerRead(const std::uint8_t* data, std::size_t size);

// A --config TOML file (written to a memory file, read by ParseCommandLine as vin-gateway reads
// it): either a GatewayConfig that Validate()s, whose breaker config the library accepts and whose
// durations print and parse back to themselves; or a ConfigError naming a flag, with a message.
int GatewayConfigFile(const std::uint8_t* data, std::size_t size);

}  // namespace fusebox::gateway::fuzz
