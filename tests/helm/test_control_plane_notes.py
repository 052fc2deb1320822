"""The chart's notes show how to point Terraform at the gateway's control plane."""

from __future__ import annotations

from tests.helm.chart import FULLNAME, NAMESPACE, render


def test_the_notes_give_terraform_the_service_address() -> None:
    notes = render().notes
    assert f'mns_open = "{FULLNAME}.{NAMESPACE}.svc:80"' in notes
    assert 'protocol  = "HTTP"' in notes


def test_behind_an_ingress_with_tls_terraform_uses_its_host_over_https() -> None:
    values = {
        "ingress": {
            "enabled": True,
            "hosts": [{"host": "mns.example.com", "paths": [{"path": "/", "pathType": "Prefix"}]}],
            "tls": [{"hosts": ["mns.example.com"], "secretName": "tls"}],
        },
        "gateway": {"adminAccessKeys": ["ops"]},
    }
    notes = render(values).notes
    assert 'mns_open = "mns.example.com"' in notes and 'protocol  = "HTTPS"' in notes
    assert "Only the access keys in gateway.adminAccessKeys may call it." in notes
