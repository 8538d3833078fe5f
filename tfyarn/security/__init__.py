"""Kerberos logins and SPNEGO for the cluster's web UIs."""
