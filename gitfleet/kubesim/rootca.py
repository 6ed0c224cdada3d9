"""The cluster's CA bundle, as the root-CA publisher hands it to every namespace.

A real controller-manager writes the ConfigMap `kube-root-ca.crt` (key `ca.crt`) into every
namespace and puts it back when it is changed or deleted; projected service-account volumes
and charts read it. kubesim serves plain HTTP, so the certificate only has to be a real one of
a CA: a self-signed EC key, made once per process.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NAME = "kube-root-ca.crt"
KEY = "ca.crt"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using "
               "internal endpoints such as the internal service IP or kubernetes.default.svc. "
               "No other usage is guaranteed across distributions of Kubernetes clusters.")


@functools.cache
def bundle() -> str:
    """PEM of a self-signed CA certificate named `kubernetes`, valid for ten years."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    start = dt.datetime.now(dt.UTC).replace(microsecond=0)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=True, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def config_map(namespace: str) -> dict[str, Any]:
    """The ConfigMap the publisher keeps in `namespace`."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": namespace,
                         "annotations": {"kubernetes.io/description": DESCRIPTION}},
            "data": {KEY: bundle()}}
