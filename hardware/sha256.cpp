#include "hardware/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace clustersim::hardware {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 || len != 32) {
    throw std::runtime_error("SHA-256: libcrypto's EVP_Digest failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0x0F];
  }
  return out;
}

std::string manifest_sha256(const std::vector<InputDigest>& inputs) {
  std::string manifest;
  for (const auto& in : inputs) manifest += in.sha256 + "  " + in.name + "\n";
  return sha256_hex(manifest);
}

}  // namespace clustersim::hardware
