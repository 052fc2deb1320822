"""Who may call: access keys, generated and temporary credentials, request signature checks."""
