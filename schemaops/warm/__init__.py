"""schemaops.warm"""
