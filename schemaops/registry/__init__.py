"""schemaops.registry"""
