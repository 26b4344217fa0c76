from edge_app.config.schema import AppConfig, ModelConfig, MQTTConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.config.file import ConfigError, load_config, parse_config, save_config

__all__ = ["AppConfig", "CameraConfig", "ModelConfig", "MQTTConfig", "ConfigError", "load_config", "parse_config", "save_config"]
