"""The fleet's wire protocol, the one copy the fleet service and the appliance's fleet agent both
import: the signature of ``R/config/desired`` messages (``desired_signature``) and the signed
manifest of a model version (``artifacts_manifest``), both HMAC-SHA256 over canonical JSON.
"""
