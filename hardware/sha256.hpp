#pragma once
// SHA-256 (FIPS 180-4) of a byte string, as 64 lower-case hex digits, through OpenSSL's libcrypto
// (EVP_Digest with EVP_sha256). The reports hash their inputs with it: each file read, and a
// manifest of "<sha256>  <name>\n" lines (the format of sha256sum) for the whole set.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::hardware {

std::string sha256_hex(std::string_view data);

// One input read: its name as the report shows it, and the SHA-256 of its bytes.
struct InputDigest {
  std::string name;
  std::string sha256;
};
// SHA-256 of the manifest "<sha256>  <name>\n" of every input, in the order given.
std::string manifest_sha256(const std::vector<InputDigest>& inputs);

}  // namespace clustersim::hardware
