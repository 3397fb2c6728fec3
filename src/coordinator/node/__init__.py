"""A running broker: the request contract, server, connections, app assembly, settings, access
control.

`contract` (RequestContext, Broker, the API registry), `server` (listeners, connections, dispatch),
`app` (a node assembled from its extensions), `config`/`cluster_settings`/`described_configs`
(settings), `access_control`/`acl_store`/`authorization` (who may do what), `data_dir`;
`apis/` holds the APIs every node answers.

May import: `coordinator.partition_log`, `coordinator.wire` and the root modules.
"""
