"""What several benchmark families share: the appliance run on a clip (``full``, ``appliance_run``), the
bare model (``raw``, ``detectors``), rounds and their summaries (``jobs``, ``rounds``, ``windows``,
``figures``), resources and the machine (``resources``, ``machine``), clips (``media``), the MQTT
watcher (``mqtt_watch``), paths and the switch interval (``settings``), and the entry points'
dispatcher (``commands``)."""
