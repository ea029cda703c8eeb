import Foundation
import JustLogCore
import NIOCore
import NIOSSL

/// Builds the TLS side of a ``LogstashClient`` from its configuration: the `NIOSSLContext`, the name
/// to check, and the public-key pins.
///
/// - Verification is on by default: the system's trust roots, or the PEM bundle in
///   ``LogstashClient/Configuration/caFile``, full chain and host name checks (the IP address SAN when
///   the host is an IP literal, which is then not sent as SNI).
/// - Pins (`pinnedSPKISHA256`, base64 of the SHA-256 of the leaf certificate's SubjectPublicKeyInfo, as
///   `openssl x509 -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`
///   prints) are checked *after* normal verification succeeded, before the connection is used — and with
///   ``LogstashClient/Configuration/allowUntrustedServer`` *instead of* it: a self-signed collector trusted by its
///   pinned key alone. Pins set are never ignored.
/// - ``LogstashClient/Configuration/allowUntrustedServer`` keeps TLS but turns verification off.
struct LogstashTLS: Sendable {
    let context: NIOSSLContext
    /// The SNI and verification name, `nil` for an IP literal.
    let serverHostname: String?
    /// Decoded pins (32 bytes each); empty: no pinning.
    let pins: [[UInt8]]

    /// - Throws: ``LogstashError`` (``LogstashError/Code/invalidTLSConfiguration``) for an unreadable CA
    ///   file or a malformed pin.
    init(host: String, caFile: String?, pinnedSPKISHA256: [String], allowUntrustedServer: Bool) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if allowUntrustedServer {
            tls.certificateVerification = .none
        } else {
            tls.certificateVerification = .fullVerification
            if let caFile {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
                } catch {
                    throw LogstashError(
                        code: .invalidTLSConfiguration,
                        message:
                            "can't read the CA bundle \(caFile): give the path of a PEM file with the collector's CA certificate",
                        cause: error
                    )
                }
            } else {
                tls.trustRoots = .default
            }
        }
        pins = try pinnedSPKISHA256.map { pin in
            guard let data = Data(base64Encoded: pin), data.count == 32 else {
                throw LogstashError(
                    code: .invalidTLSConfiguration,
                    message: "the pin \"\(pin)\" is not the base64 of a 32-byte SHA-256 digest"
                )
            }
            return [UInt8](data)
        }
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw LogstashError(code: .invalidTLSConfiguration, message: "can't set up TLS", cause: error)
        }
        serverHostname = Self.isIPLiteral(host) ? nil : host
    }

    /// `true` for `127.0.0.1`, `::1` and the like.
    static func isIPLiteral(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    /// `nil` if `certificate`'s public key matches a pin (or there are no pins), else the reason. Checked with
    /// verification off too: there, the pins are all the trust there is.
    func checkPins(_ certificate: NIOSSLCertificate?) -> String? {
        guard !pins.isEmpty else { return nil }
        guard let certificate else { return "the server sent no certificate to check the pins against" }
        guard let spki = try? certificate.extractPublicKey().toSPKIBytes() else {
            return "can't read the server certificate's public key"
        }
        let digest = SHA256.hash(spki)
        if pins.contains(digest) { return nil }
        return
            "the server's public key (SHA-256 \(Data(digest).base64EncodedString())) matches none of the \(pins.count) pinned keys"
    }
}
