"""The pure render core: fleet snapshot + cluster status + previous state -> Descriptions.

Imports no Git, no Kubernetes client and no clock.
"""
