// SHA-256 through libcrypto: the FIPS 180-4 examples (NIST CSRC "Examples with Intermediate
// Values", SHA256.pdf) and the manifest hash the reports print.

#include "hardware/sha256.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace clustersim::hardware;

TEST_CASE("SHA-256 gives the FIPS 180-4 example digests", "[unit][reports]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' (the standard's long message).
  CHECK(sha256_hex(std::string(1'000'000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("the inputs' hash is that of their sha256sum manifest, in order", "[unit][reports]") {
  const std::vector<InputDigest> in{{"plan.json", sha256_hex("abc")}, {"hardware/catalog/prices.json", sha256_hex("")}};
  CHECK(manifest_sha256(in) ==
        sha256_hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  plan.json\n"
                   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  hardware/catalog/prices.json\n"));
  CHECK(manifest_sha256({in[1], in[0]}) != manifest_sha256(in));
}
