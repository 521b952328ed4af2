// Certificates for the TLS tests, made with the `openssl` command line into a temporary directory
// (removed when destroyed): a CA, a server certificate for localhost and 127.0.0.1 signed by it,
// a client certificate signed by it, and another CA that signed none of them (the "wrong CA").
// EC keys (P-256): quick to make. Valid for two days.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "support/child_process.h"

namespace fusebox::testing {

class TlsFiles {
 public:
  TlsFiles() {
    char dir_template[] = "/tmp/fusebox-tls-XXXXXX";
    dir_ = mkdtemp(dir_template);
    ok_ = MakeCa("ca", "fusebox test CA") && MakeCa("other-ca", "another CA") &&
          Write("server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n") &&
          Write("client.ext", "extendedKeyUsage=clientAuth\n") &&
          MakeSigned("server", "localhost", "server.ext") &&
          MakeSigned("client", "fusebox-client", "client.ext");
  }
  ~TlsFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  static const char* Openssl() { return FUSEBOX_OPENSSL; }
  static bool Available() { return std::filesystem::exists(Openssl()); }

  // Whether every file was made; error() says what failed.
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }

  std::string ca() const { return dir_ + "/ca.crt"; }
  std::string other_ca() const { return dir_ + "/other-ca.crt"; }
  std::string server_cert() const { return dir_ + "/server.crt"; }
  std::string server_key() const { return dir_ + "/server.key"; }
  std::string client_cert() const { return dir_ + "/client.crt"; }
  std::string client_key() const { return dir_ + "/client.key"; }

  // redis-server's arguments for a TLS-only server on `port`; `auth_clients`: "no", "optional"
  // or "yes" (a client certificate signed by ca() required).
  std::vector<std::string> ServerArgs(std::uint16_t port, const std::string& auth_clients) const {
    return {"--port",
            "0",
            "--tls-port",
            std::to_string(port),
            "--tls-cert-file",
            server_cert(),
            "--tls-key-file",
            server_key(),
            "--tls-ca-cert-file",
            ca(),
            "--tls-auth-clients",
            auth_clients};
  }

 private:
  bool RunOpenssl(std::vector<std::string> args) {
    args.insert(args.begin(), Openssl());
    const RunResult result = Run(args, {}, std::chrono::seconds(30));
    if (result.exit_code != 0) {
      error_ = "openssl " + args[1] + ": " + result.err;
      return false;
    }
    return true;
  }
  bool Write(const std::string& name, const std::string& text) {
    std::FILE* file = std::fopen((dir_ + "/" + name).c_str(), "w");
    if (file == nullptr) {
      error_ = "cannot write " + name;
      return false;
    }
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    std::fclose(file);
    return written;
  }
  bool MakeCa(const std::string& name, const std::string& subject) {
    return RunOpenssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                       "-nodes", "-keyout", dir_ + "/" + name + ".key", "-out",
                       dir_ + "/" + name + ".crt", "-days", "2", "-subj", "/CN=" + subject});
  }
  bool MakeSigned(const std::string& name, const std::string& common_name,
                  const std::string& extensions) {
    const std::string base = dir_ + "/" + name;
    return RunOpenssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                       "-keyout", base + ".key", "-out", base + ".csr", "-subj",
                       "/CN=" + common_name}) &&
           RunOpenssl({"x509", "-req", "-in", base + ".csr", "-CA", ca(), "-CAkey",
                       dir_ + "/ca.key", "-CAcreateserial", "-out", base + ".crt", "-days", "2",
                       "-extfile", dir_ + "/" + extensions});
  }

  std::string dir_;
  bool ok_ = false;
  std::string error_;
};

}  // namespace fusebox::testing
