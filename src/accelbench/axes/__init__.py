"""axes"""
