"""Realistic tool outputs used by the masking tests (kubectl / kubernetes-mcp-server shapes)."""

import json

SECRET_PASSWORD_B64 = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # "super-secret-password"
SECRET_USER_B64 = "YWRtaW4="  # "admin"

SECRET_YAML = f"""apiVersion: v1
data:
  password: {SECRET_PASSWORD_B64}
  tls.key: |
    LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t
    TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFF
  username: {SECRET_USER_B64}
kind: Secret
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {{"apiVersion":"v1","data":{{"password":"{SECRET_PASSWORD_B64}","username":"{SECRET_USER_B64}"}},"kind":"Secret","metadata":{{"annotations":{{}},"name":"db-credentials","namespace":"prod"}},"type":"Opaque"}}
  creationTimestamp: "2025-05-01T10:00:00Z"
  name: db-credentials
  namespace: prod
  resourceVersion: "48213"
  uid: 3f1c2a4e-7d9c-4b6f-9a51-2e8d1c0b7a66
type: Opaque
"""

_APPLIED = {
    "apiVersion": "v1",
    "data": {"password": SECRET_PASSWORD_B64},
    "kind": "Secret",
    "metadata": {"name": "db-credentials", "namespace": "prod"},
}
# kubectl stores the annotation as compact JSON (with a trailing newline) inside a JSON string.
_APPLIED_JSON = json.dumps(json.dumps(_APPLIED, separators=(",", ":")) + "\n")

SECRET_JSON = f"""{{
    "apiVersion": "v1",
    "data": {{
        "password": "{SECRET_PASSWORD_B64}",
        "username": "{SECRET_USER_B64}"
    }},
    "kind": "Secret",
    "metadata": {{
        "annotations": {{
            "kubectl.kubernetes.io/last-applied-configuration": {_APPLIED_JSON}
        }},
        "name": "db-credentials",
        "namespace": "prod"
    }},
    "stringData": {{
        "api-token": "plain-text-token-value"
    }},
    "type": "Opaque"
}}
"""

SECRET_LIST_YAML = f"""apiVersion: v1
items:
- apiVersion: v1
  data:
    password: {SECRET_PASSWORD_B64}
  kind: Secret
  metadata:
    name: first
    namespace: prod
  type: Opaque
- apiVersion: v1
  data:
    LOG_LEVEL: debug
  kind: ConfigMap
  metadata:
    name: settings
    namespace: prod
- apiVersion: v1
  kind: Secret
  metadata:
    name: second
    namespace: prod
  stringData:
    token: second-plain-value
  type: Opaque
kind: List
metadata:
  resourceVersion: ""
"""

CONFIGMAP_YAML = """apiVersion: v1
data:
  DB_HOST: orders-db
  LOG_LEVEL: info
  app.properties: |
    feature.checkout=true
    cache.ttl=300
kind: ConfigMap
metadata:
  creationTimestamp: "2025-05-01T10:00:00Z"
  name: web-config
  namespace: shop
  uid: 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d
"""

KUBECONFIG = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRRA==
    server: https://10.0.1.10:6443
  name: prod
contexts:
- context:
    cluster: prod
    user: admin
  name: prod
current-context: prod
kind: Config
users:
- name: admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM4akNDQWRxZ0F3SUJBZ0lJYg==
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB
    token: kubeconfig-token-0123456789abcdefXYZ
"""

PEM_BLOCKS = """tls.crt:
-----BEGIN CERTIFICATE-----
MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ
RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD
-----END CERTIFICATE-----
tls.key:
-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw
-----END RSA PRIVATE KEY-----
"""

HEALTHY_POD_YAML = """apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: '2025-06-03T13:38:00Z'
  labels:
    app: web
    pod-template-hash: 7d9c8b6f5
  name: web-7d9c8b6f5-x2k4q
  namespace: shop
  uid: 04c6b113-eb1c-475c-ad1f-11ee108d23c5
spec:
  containers:
  - image: registry.example.com/shop/web:2.14.1
    imagePullPolicy: IfNotPresent
    name: web
    terminationMessagePath: /dev/termination-log
    volumeMounts:
    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      name: kube-api-access-5kq8z
      readOnly: true
  volumes:
  - name: creds
    secret:
      secretName: orders-db-credentials
status:
  containerStatuses:
  - containerID: containerd://4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a
    imageID: registry.example.com/shop/web@sha256:9b2a4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c
    lastState:
      terminated:
        exitCode: 1
        finishedAt: '2025-06-03T14:28:11Z'
        reason: Error
    ready: false
    restartCount: 14
    state:
      waiting:
        reason: CrashLoopBackOff
  phase: Running
  podIP: 10.244.2.31
  qosClass: Burstable
"""
