"""The control plane's certificates: one CA, the API server's serving certificate, client certificates for named
users and groups, and the service-account signing key pair.

As in a kubeadm cluster, the API server trusts client certificates the CA signed and reads the user from their
Common Name and the groups from their Organizations; ``system:masters`` is the admin group RBAC never denies.
Keys are ECDSA P-256: quick to make (a test cluster makes a dozen) and accepted by every Kubernetes component.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
#: names the serving certificate answers to: loopback, and the in-cluster names of the ``kubernetes`` Service
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local")
SERVING_IPS = ("127.0.0.1", "10.0.0.1")


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, as PEM bytes."""

    certificate: bytes
    key: bytes

    def write(self, directory: Path, name: str) -> tuple[Path, Path]:
        """``<name>.crt`` and ``<name>.key`` in ``directory`` (the key readable by its owner only)."""
        cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
        cert_path.write_bytes(self.certificate)
        key_path.touch(mode=0o600)
        key_path.write_bytes(self.key)
        return cert_path, key_path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class CertificateAuthority:
    """A self-signed CA that issues the serving certificate and client certificates."""

    def __init__(self, common_name: str = "poolboy-control-plane-ca") -> None:
        self._key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        self._name = _name(common_name)
        self._certificate = (
            x509.CertificateBuilder()
            .subject_name(self._name).issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(self._key, hashes.SHA256())
        )

    @property
    def certificate(self) -> bytes:
        return self._certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def pair(self) -> KeyPair:
        return KeyPair(self.certificate, _pem_key(self._key))

    def serving(self, names: tuple[str, ...] = SERVING_NAMES, ips: tuple[str, ...] = SERVING_IPS) -> KeyPair:
        """A server certificate for the API server, valid for ``names`` and ``ips``."""
        alternatives: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
        alternatives += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        return self._issue(_name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH,
                           x509.SubjectAlternativeName(alternatives))

    def client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate the API server authenticates as ``user`` in ``groups``."""
        return self._issue(_name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH)

    def _issue(self, subject: x509.Name, usage: x509.ObjectIdentifier,
               alternatives: x509.SubjectAlternativeName | None = None) -> KeyPair:
        key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alternatives is not None:
            builder = builder.add_extension(alternatives, critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        return KeyPair(certificate.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def service_account_keys() -> KeyPair:
    """The key pair the API server signs service-account tokens with (``certificate`` holds the public key)."""
    key = _new_key()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return KeyPair(public, _pem_key(key))
