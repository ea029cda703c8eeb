import Foundation
import JustLogCore

/// TLS material generated with the `openssl` command for one test run: a CA, a good server certificate
/// for `localhost` / `127.0.0.1` signed by it, and bad ones (self-signed, wrong host, expired), each
/// as `<name>.pem` + `<name>.key` in ``directory``.
public final class TestCertificates: @unchecked Sendable {
    /// Where the files are.
    public let directory: TemporaryDirectory
    /// The CA certificate (PEM): trust it to accept ``goodServer``.
    public var caFile: String { directory.file("ca.pem") }

    /// A certificate/key pair.
    public struct Pair: Sendable {
        public var certificate: String
        public var key: String
    }

    /// CN=localhost, SAN DNS:localhost,IP:127.0.0.1, EKU serverAuth, signed by the CA.
    public var goodServer: Pair { pair("server") }
    /// The same names, self-signed.
    public var selfSigned: Pair { pair("selfsigned") }
    /// Signed by the CA, for `other.example.com` only.
    public var wrongHost: Pair { pair("wronghost") }
    /// Signed by the CA, valid names, expired.
    public var expired: Pair { pair("expired") }

    /// `true` if `/usr/bin/openssl` (or `openssl` on the PATH) exists.
    public static var opensslPath: String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// ``init()`` on a thread of its own: it runs `openssl` a dozen times, about a second that would otherwise
    /// hold one of the test pool's two threads.
    public static func make() async throws -> TestCertificates {
        try await offThePool { Result { try TestCertificates() } }.get()
    }

    /// Generates everything (about a second, EC P-256 keys). Tests call ``make()``.
    public init() throws {
        guard let openssl = Self.opensslPath else {
            throw ProcessRunner.Failure(description: "openssl is not installed")
        }
        directory = try TemporaryDirectory(prefix: "certs")
        let dir = directory.path
        func run(_ arguments: [String]) throws { try ProcessRunner.run(openssl, arguments, in: dir) }
        func key(_ name: String) throws {
            try run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(name).key"])
        }
        func extensions(_ name: String, san: String) throws {
            let text = """
                basicConstraints=CA:FALSE
                keyUsage=digitalSignature,keyEncipherment
                extendedKeyUsage=serverAuth
                subjectAltName=\(san)

                """
            try text.write(toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
        }
        func signed(_ name: String, cn: String, san: String, extra: [String] = []) throws {
            try key(name)
            try extensions(name, san: san)
            try run(["req", "-new", "-key", "\(name).key", "-subj", "/CN=\(cn)", "-out", "\(name).csr"])
            try run(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-extfile", "\(name).ext", "-out", "\(name).pem",
                ] + (extra.isEmpty ? ["-days", "30"] : extra)
            )
        }

        try key("ca")
        try run([
            "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=JustLog Test CA", "-days", "30",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out",
            "ca.pem",
        ])
        try signed("server", cn: "localhost", san: "DNS:localhost,IP:127.0.0.1")
        try signed("wronghost", cn: "other.example.com", san: "DNS:other.example.com")
        // Expired: valid for one day, two days ago (openssl 3 `x509 -not_before/-not_after` need 3.4; use `ca`-free trick via -days 1 and a backdated start).
        try key("expired")
        try extensions("expired", san: "DNS:localhost,IP:127.0.0.1")
        try run(["req", "-new", "-key", "expired.key", "-subj", "/CN=localhost", "-out", "expired.csr"])
        try Self.backdated(openssl: openssl, dir: dir)
        try key("selfsigned")
        try run([
            "req", "-x509", "-new", "-key", "selfsigned.key", "-subj", "/CN=localhost", "-days", "30",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext", "extendedKeyUsage=serverAuth", "-out",
            "selfsigned.pem",
        ])
    }

    /// Signs `expired.csr` with the CA for a validity window entirely in the past, using `openssl ca`
    /// (which takes explicit start and end dates on every openssl 1.1/3.x).
    private static func backdated(openssl: String, dir: String) throws {
        try FileManager.default.createDirectory(atPath: "\(dir)/ca-db", withIntermediateDirectories: true)
        try "".write(toFile: "\(dir)/ca-db/index.txt", atomically: true, encoding: .utf8)
        try "1000\n".write(toFile: "\(dir)/ca-db/serial", atomically: true, encoding: .utf8)
        let config = """
            [ ca ]
            default_ca = test_ca
            [ test_ca ]
            dir = \(dir)/ca-db
            database = $dir/index.txt
            serial = $dir/serial
            new_certs_dir = $dir
            certificate = \(dir)/ca.pem
            private_key = \(dir)/ca.key
            default_md = sha256
            policy = any
            copy_extensions = none
            unique_subject = no
            [ any ]
            commonName = supplied

            """
        try config.write(toFile: "\(dir)/ca.cnf", atomically: true, encoding: .utf8)
        try ProcessRunner.run(
            openssl,
            [
                "ca", "-batch", "-config", "ca.cnf", "-in", "expired.csr", "-out", "expired.pem", "-notext",
                "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-extfile", "expired.ext",
            ],
            in: dir
        )
    }

    private func pair(_ name: String) -> Pair {
        Pair(certificate: directory.file("\(name).pem"), key: directory.file("\(name).key"))
    }

    /// The base64 SHA-256 of the certificate's SubjectPublicKeyInfo: the value to pin.
    public func spkiSHA256(of certificate: String) throws -> String {
        guard let openssl = Self.opensslPath else {
            throw ProcessRunner.Failure(description: "openssl is not installed")
        }
        let dir = directory.path
        try ProcessRunner.run(openssl, ["x509", "-in", certificate, "-pubkey", "-noout", "-out", "pin.pub"], in: dir)
        try ProcessRunner.run(
            openssl,
            ["pkey", "-pubin", "-in", "pin.pub", "-outform", "der", "-out", "pin.der"],
            in: dir
        )
        try ProcessRunner.run(openssl, ["dgst", "-sha256", "-binary", "-out", "pin.bin", "pin.der"], in: dir)
        return try Data(contentsOf: URL(fileURLWithPath: "\(dir)/pin.bin")).base64EncodedString()
    }
}
